// Command program wires handlers declared in other packages: the
// whole-program mode follows them; the per-package mode does not.
package main

import (
	"context"
	"net/http"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/segmentio/kafka-go"
	"github.com/zeromicro/go-queue/kq"

	"example.com/program/autolog"
	"example.com/program/bridge"
	"example.com/program/chanloop"
	"example.com/program/clicks"
	"example.com/program/confmap"
	"example.com/program/deepworker"
	"example.com/program/deletefirst"
	"example.com/program/devices"
	"example.com/program/dlqboth"
	"example.com/program/dropped"
	"example.com/program/dupseen"
	"example.com/program/earlydel"
	"example.com/program/fanout"
	"example.com/program/gen"
	"example.com/program/generic"
	"example.com/program/golam"
	"example.com/program/handlers"
	"example.com/program/keyedpost"
	"example.com/program/kqueue"
	"example.com/program/kworker"
	"example.com/program/lake"
	"example.com/program/latecheck"
	"example.com/program/launcher"
	"example.com/program/ledger"
	"example.com/program/methval"
	"example.com/program/mqs"
	"example.com/program/multiface"
	"example.com/program/notify"
	"example.com/program/orders"
	"example.com/program/poller"
	"example.com/program/readwrap"
	readkq "example.com/program/readwrap/kq"
	"example.com/program/recs"
	"example.com/program/seenfirst"
	"example.com/program/sources"
	"example.com/program/spanbus"
	"example.com/program/sqsgate"
	"example.com/program/sqsgate/waiter"
	"example.com/program/surface"
	"example.com/program/swallow"
	"example.com/program/synccb"
	"example.com/program/synccb/store"
	"example.com/program/twochans"
	"example.com/program/viabase"
	"example.com/programshared/consumer"
)

func main() {
	c := &http.Client{Timeout: 5 * time.Second}
	s := &handlers.Service{N: notify.New(), Hook: notify.NewHook(c), Jobs: make(chan handlers.Job), C: c}
	go handlers.Worker(c, s.Jobs)
	go waiter.Wait(context.Background(), sqsgate.New(&sqs.Client{}))
	go readwrap.Settle(context.Background(), readkq.New())
	go dupseen.Orders(context.Background(), kafka.NewReader(kafka.ReaderConfig{GroupID: "orders"}), nil)
	go (&gen.Scheduler{C: c}).Run(context.Background(), &gen.Store{})
	pool := &gen.Pool{Jobs: make(chan gen.Job), C: c}
	pool.Start(nil)
	go pool.Consume(context.Background(), kafka.NewReader(kafka.ReaderConfig{}))
	go (&consumer.Base{R: kafka.NewReader(kafka.ReaderConfig{}), H: &viabase.Shipper{C: c}}).Run(context.Background())
	go multiface.ConsumeNested(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), &multiface.Executor{})
	go multiface.ConsumeWrapped(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), &multiface.Executor{})
	go (&kworker.Worker{Q: kqueue.New(), C: c}).Run(context.Background())
	r := &message.Router{}
	r.AddNoPublisherHandler("orders", "orders", nil, orders.Handle)
	dw := deepworker.New()
	go dw.Collect()
	r.AddNoPublisherHandler("deep", "orders", nil, dw.Enqueue)
	r.AddNoPublisherHandler("notify", "signups", nil, handlers.NotifyHandler(s))
	r.AddNoPublisherHandler("hook", "signups", nil, handlers.HookHandler(s))
	r.AddNoPublisherHandler("async", "refunds", nil, s.AsyncHandler)
	br := bridge.New()
	go bridge.Run(br)
	r.AddNoPublisherHandler("bridge", "in", nil, br.Forward)
	r.AddNoPublisherHandler("quiet", "lake", nil, lake.Quiet)
	r.AddNoPublisherHandler("loud", "lake", nil, lake.Loud)
	fo := &fanout.F{}
	r.AddNoPublisherHandler("split", "orders", nil, fo.Split)
	r.AddNoPublisherHandler("ship", "orders", nil, fo.Ship)
	r.AddNoPublisherHandler("guard", "orders", nil, fo.Guard)
	sm := &surface.Manager{P: &surface.Poster{C: c}, M: &surface.Mirror{C: c}}
	r.AddNoPublisherHandler("closed", "threads", nil, sm.OnClosed)
	r.AddNoPublisherHandler("mirror", "threads", nil, sm.OnMirror)
	r.AddNoPublisherHandler("span", "events", nil, (&spanbus.Bus{D: &spanbus.Webhook{C: c}}).Handle)
	tc := twochans.New()
	go tc.Log()
	go tc.Pay()
	r.AddNoPublisherHandler("audit", "orders", nil, tc.Audit)
	kp := &keyedpost.Poster{C: c}
	r.AddNoPublisherHandler("label-uuid", "shipments", nil, kp.ByUUID)
	r.AddNoPublisherHandler("label-order", "shipments", nil, kp.ByOrder)
	kq.MustNewQueue(kq.KqConf{}, mqs.NewPaymentMq(c)).Start()
	kq.MustNewQueue(kq.KqConf{}, mqs.NewRefundMq(c)).Start()
	st := &methval.Store{C: c}
	go methval.Run(context.Background(), &sqs.Client{}, st.Save)
	go methval.RunWork(context.Background(), &sqs.Client{}, methval.Notifier(c))
	go swallow.ConsumeEach(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), &swallow.Purchases{})
	go swallow.ConsumeStatus(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), nil)
	go multiface.ConsumeReports(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), &multiface.DBStorage{})
	go swallow.Consume(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), swallow.MakeProcess(nil))
	out := make(chan sources.Message)
	go (&sources.Kafka{R: kafka.NewReader(kafka.ReaderConfig{}), Next: &sources.SQS{C: &sqs.Client{}}}).Read(context.Background(), out)
	go target(out)
	poller.Poll(context.Background(), &sqs.Client{}, "https://sqs.example/q", &ledger.Ledger{C: c})
	go deletefirst.RunActions(context.Background(), &sqs.Client{}, "https://sqs.example/actions", c)
	go generic.New[string](&sqs.Client{}, "https://sqs.example/hooks", c).Start(context.Background())
	go recs.RunPoller(nil)
	go (&autolog.Tracker{}).Run()
	go chanloop.Notify(nil, c)
	go chanloop.NotifyLogged(nil, c)
	go confmap.Run(nil)
	go golam.Main(c)
	go dropped.Run(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), nil, c)
	go synccb.Run(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), &store.Totals{}, &store.DeadLetters{W: &kafka.Writer{}})
	ed := &earlydel.Consumer{Store: &earlydel.Dynamo{}}
	go ed.Run(context.Background())
	go ed.RunPut(context.Background())
	go devices.Consume(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), &devices.Repo{})
	go confmap.RunManual(nil)
	go (&launcher.Scaler{Store: &launcher.Store{}}).Run(context.Background())
	go (&latecheck.Writer{R: kafka.NewReader(kafka.ReaderConfig{})}).Run(context.Background())
	go (&dlqboth.Consumer{R: kafka.NewReader(kafka.ReaderConfig{})}).Run(context.Background())
	go seenfirst.Run(context.Background(), kafka.NewReader(kafka.ReaderConfig{}), &seenfirst.Processor{Notifier: seenfirst.HTTPNotifier{URL: "http://notify"}})
	l := &autolog.Listener{R: kafka.NewReader(kafka.ReaderConfig{GroupID: "sources"})}
	go l.Listen(context.Background())
	go l.Strict(context.Background())
	// Blocks in main: Start is no goroutine of its own.
	_ = (&clicks.StatService{Sub: &clicks.Subscriber{R: kafka.NewReader(kafka.ReaderConfig{GroupID: "stats"})}}).Start(context.Background())
}

// target writes what the sources read; the ack closures it calls are out of
// the walk's sight, as a replicator's targets in another package are.
func target(out <-chan sources.Message) {
	acks := map[string]func(){}
	for m := range out {
		acks[m.Data] = m.Ack
	}
}
