package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/router"
)

// The SQS modes comparison (issue #21): publish -> effect on SQS (fauxqs)
// with PostgreSQL, 1,000 keys (FIFO: 1,000 message groups), the consumers
// side by side, the provider answering at once and after 20 ms, runs
// alternating between the modes. `go run ./benchmarks -sqs-modes`.

// The SQS consumers compared (modeUnsafe and modeHandSafe are shared with
// the Kafka comparison).
const (
	smRouter       = "ackgap router"
	smBatched      = "ackgap batched"
	smLambda       = "ackgap Lambda batched"
	smBatchedFIFO  = "ackgap batched FIFO"
	smLambdaFIFO   = "ackgap Lambda batched FIFO"
	smWorkers      = sqsbroker.WorkersDefault // receive loops of every mode
	smWaitSeconds  = 1                        // long poll of the hand-written loops
	smSendWorkers  = 8                        // SendMessageBatch calls in flight while publishing
	smVisibility   = 30 * time.Second         // the queues' visibility timeout
	smAttempt      = 5 * time.Second          // ackgap's AttemptTimeout (6× fits in smVisibility)
	smNackDelay    = time.Second              // ackgap's NackDelay: its least (visibility is whole seconds)
	smLambdaFailVT = 1                        // seconds: a Lambda failure's visibility (see lambdaLoop)
)

var smModes = []string{modeUnsafe, modeHandSafe, smRouter, smBatched, smLambda, smBatchedFIFO, smLambdaFIFO}

func smFIFO(mode string) bool { return strings.HasSuffix(mode, " FIFO") }

// smOptions are the comparison's flags.
type smOptions struct {
	on     bool
	events int
	runs   int
	delays []time.Duration
	modes  []string
	// relayPoll is ackgap's relay's PollInterval; zero means the relay's
	// default (outbox.PollIntervalDefault), what users get. The
	// hand-written relay polls every kmPollEvery, as it has nothing else;
	// ackgap's gets its rows by direct dispatch, and the poll only finds
	// rows whose hold lapsed.
	relayPoll time.Duration
	endpoint  string
	dsn       string
}

// smEnv is the Kafka comparison's database, provider and relay plus an
// SQS client on fauxqs.
type smEnv struct {
	*kmEnv
	sqs       *sqsE2E
	fauxqsPID int
}

// runSQSModes runs the comparison and returns its markdown.
func runSQSModes(ctx context.Context, o smOptions, progress io.Writer) (string, error) {
	started := time.Now()
	load := smLoad{cpus: runtime.NumCPU(), before: loadAverage()}
	km, err := openKMEnv(ctx, kmOptions{dsn: o.dsn, events: o.events})
	if err != nil {
		return "", err
	}
	defer km.close()
	s, err := openSQSE2E(ctx, o.endpoint)
	if err != nil {
		return "", err
	}
	defer func() { _ = s.close() }()
	host := strings.TrimPrefix(strings.TrimPrefix(o.endpoint, "http://"), "https://")
	km.relayPoll = cmp.Or(o.relayPoll, outbox.PollIntervalDefault)
	env := &smEnv{kmEnv: km, sqs: s, fauxqsPID: brokerProcess("fauxqs", strings.SplitN(host, "/", 2)[0])}
	var results []*kmResult
	total := len(o.delays) * len(o.modes) * o.runs
	for run := range o.runs {
		for _, d := range o.delays {
			for _, m := range o.modes {
				if err := ctx.Err(); err != nil {
					return "", err
				}
				res, err := env.run(ctx, m, d)
				if err != nil {
					return "", fmt.Errorf("%s (provider %s) run %d: %w", m, d, run+1, err)
				}
				results = append(results, res)
				load.sample()
				mark := "ok"
				if !res.correct() {
					mark = "NOT CORRECT: " + res.why
				}
				fmt.Fprintf(progress, "[%3d/%d %6.1fs] %-27s provider %-5s %7.0f events/s %4.0f µs/event (load %s)  %s\n    per event: %s\n", len(results), total,
					time.Since(started).Seconds(), m, d, res.rate(), res.cpuPerEvent(), loadAverage(), mark, res.callsPerEvent())
			}
		}
	}
	load.after = loadAverage()
	load.sample()
	return smMarkdown(o, results, time.Since(started), load, env.fauxqsPID != 0), nil
}

// smLoad is the machine's 1-minute load average over the comparison: at
// the start (which still holds the build of `go run`), at the end, and
// the highest after any run.
type smLoad struct {
	cpus          int
	before, after string
	peak          float64
	sampled       bool
}

// sample reads the 1-minute load average and keeps the highest.
func (l *smLoad) sample() {
	if v, err := strconv.ParseFloat(loadAverage(), 64); err == nil {
		l.peak, l.sampled = max(l.peak, v), true
	}
}

// shared reports whether other jobs shared the machine: a 1-minute load
// above the CPUs plus one after some run. The comparison on its own keeps
// its process, PostgreSQL and fauxqs runnable, about one to two on 2 CPUs.
func (l smLoad) shared() bool { return l.sampled && l.peak > float64(l.cpus+1) }

// note is the section's sentence on the load, saying what was measured.
func (l smLoad) note() string {
	s := fmt.Sprintf("%d CPUs; load average (1 min) %s at the start, %s at the end", l.cpus, l.before, l.after)
	switch {
	case !l.sampled:
		return s + " (the load during the runs was not read)."
	case l.shared():
		return s + fmt.Sprintf(", at most %.2f after a run. **Other jobs shared the machine while this ran (a load above the CPUs plus one, "+
			"more than the comparison makes on its own): the figures are from a loaded machine, not a quiet one**; absolute figures are "+
			"noisy, ratios within one run less so.", l.peak)
	default:
		return s + fmt.Sprintf(", at most %.2f after a run: no more than the comparison makes on its own (the bound is the CPUs plus one), "+
			"so the machine was otherwise quiet.", l.peak)
	}
}

// run runs mode once on a fresh queue.
func (env *smEnv) run(ctx context.Context, mode string, delay time.Duration) (*kmResult, error) {
	res := &kmResult{mode: mode, delay: delay, events: env.o.events}
	evs := kmPlan(env.o.events, false)
	env.dead.n.Store(0)
	if _, err := env.pool.Exec(ctx, `TRUNCATE orders, misses, hand_inbox, hand_outbox, ackgap_inbox, ackgap_outbox`); err != nil {
		return nil, err
	}
	if _, err := env.pool.Exec(ctx, `INSERT INTO orders (id) SELECT 'k-' || i FROM generate_series(0, $1::int - 1) AS i`, kmKeys); err != nil {
		return nil, err
	}
	env.prov.reset(delay)
	fifo := smFIFO(mode)
	name := "ackgap-smodes-" + randomSuffix()
	attrs := map[string]string{"VisibilityTimeout": strconv.Itoa(int(smVisibility / time.Second))}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	out, err := env.sqs.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return nil, fmt.Errorf("create queue %s: %w", name, err)
	}
	queueURL := aws.ToString(out.QueueUrl)
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = env.sqs.client.DeleteQueue(dctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)})
	}()
	runCtx, cancel := context.WithTimeout(ctx, kmRunTimeout)
	defer cancel()
	pids, relayPIDs := kmPoolPIDs(ctx, env.pool), kmPoolPIDs(ctx, env.relayPool)
	var gaps gapRecorder
	stop, err := env.start(runCtx, mode, name, queueURL, &gaps)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop()
		}
	}()
	runtime.GC()
	self0 := selfCPU()
	pg0, _ := schedCPU(pids)
	rpg0, _ := schedCPU(relayPIDs)
	br0, _ := processCPU(env.fauxqsPID)
	calls0, sql0, rsql0 := env.sqs.calls.snapshot(), env.sqlCalls.roundTrips(), env.relaySQLCalls.roundTrips()
	st0, rst0 := env.sqlCalls.statements(), env.relaySQLCalls.statements()
	allDone := env.prov.await(2 * len(evs))
	start := time.Now()
	pubErr := make(chan error, 1)
	go func() { pubErr <- env.publish(runCtx, queueURL, fifo, evs) }()
	select {
	case last := <-allDone:
		res.elapsed = last.Sub(start)
	case err := <-pubErr:
		if err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		select {
		case last := <-allDone:
			res.elapsed = last.Sub(start)
		case <-runCtx.Done():
			return nil, fmt.Errorf("not every effect called within %s: %d of %d", kmRunTimeout, env.prov.count(), 2*len(evs))
		}
	case <-runCtx.Done():
		return nil, fmt.Errorf("not every effect called within %s: %d of %d", kmRunTimeout, env.prov.count(), 2*len(evs))
	}
	res.cpuSelf = selfCPU() - self0
	pg1, _ := schedCPU(pids)
	rpg1, _ := schedCPU(relayPIDs)
	br1, _ := processCPU(env.fauxqsPID)
	res.cpuPG, res.cpuRelayPG, res.cpuBroker = pg1-pg0, rpg1-rpg0, br1-br0
	res.sqsCalls = callsSince(calls0, env.sqs.calls.snapshot())
	res.sql, res.relaySQL = env.sqlCalls.roundTrips()-sql0, env.relaySQLCalls.roundTrips()-rsql0
	res.sqlStatements, res.relaySQLStatements = env.sqlCalls.statements()-st0, env.relaySQLCalls.statements()-rst0
	for i := 0; i < 200 && gaps.pending() > 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	stopped = true
	if err := stop(); err != nil {
		return nil, fmt.Errorf("stop: %w", err)
	}
	res.ackGaps, res.unconfirmed = gaps.snapshot()
	res.leaseHeadrooms = gaps.leaseHeadrooms()
	env.check(ctx, res, evs)
	return res, nil
}

// publish sends evs with SendMessageBatch, smSendWorkers calls in flight,
// in waves by step (every key's first event, then every key's second...),
// so that a key's events are sent in order (FIFO: its MessageGroupId is
// the key, its MessageDeduplicationId the event id).
func (env *smEnv) publish(ctx context.Context, queueURL string, fifo bool, evs []kmEvent) error {
	var waves [][]kmEvent
	for _, e := range evs {
		for len(waves) < e.seq {
			waves = append(waves, nil)
		}
		waves[e.seq-1] = append(waves[e.seq-1], e)
	}
	for _, wave := range waves {
		var chunks [][]kmEvent
		for c := range slices.Chunk(wave, 10) {
			chunks = append(chunks, c)
		}
		next := make(chan []kmEvent)
		errs := make(chan error, smSendWorkers)
		var wg sync.WaitGroup
		for range smSendWorkers {
			wg.Go(func() {
				for c := range next {
					if err := env.sendBatch(ctx, queueURL, fifo, c); err != nil {
						errs <- err
						for range next {
						}
						return
					}
				}
			})
		}
		for _, c := range chunks {
			next <- c
		}
		close(next)
		wg.Wait()
		select {
		case err := <-errs:
			return err
		default:
		}
	}
	return nil
}

func (env *smEnv) sendBatch(ctx context.Context, queueURL string, fifo bool, evs []kmEvent) error {
	entries := make([]types.SendMessageBatchRequestEntry, len(evs))
	for i, e := range evs {
		msg := message.NewMessage(e.id, []byte(e.order+","+strconv.Itoa(e.seq)))
		msg.Metadata.Set(ackgap.MetadataEventIDKey, e.id)
		msg.Metadata.Set(sqsbroker.MetadataPartitionKey, e.order)
		m, err := sqsbroker.Marshaler{}.Marshal(msg)
		if err != nil {
			return err
		}
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: m.Body, MessageAttributes: m.MessageAttributes}
		if fifo {
			entries[i].MessageGroupId, entries[i].MessageDeduplicationId = aws.String(e.order), aws.String(e.id)
		}
	}
	out, err := env.sqs.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("SendMessageBatch: %d entries failed, first: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
	}
	return nil
}

// errEarly is a step that arrived before its key's previous one: a
// standard queue does not keep order, so every consumer retries it (the
// message returns) rather than applying it out of order.
var errEarly = errors.New("step arrived before its key's previous one: retried")

// smStep applies the guarded step with exec: an early step is errEarly
// (nothing written), a step at or behind the key's current one (applied
// twice, or out of order) is recorded as a miss.
func smStep(ctx context.Context, exec func(ctx context.Context, sql string, args ...any) (int64, error), query func(ctx context.Context, sql string, args ...any) pgx.Row, order string, seq int) error {
	n, err := exec(ctx, guardedStep, order, seq)
	if err != nil || n == 1 {
		return err
	}
	var cur int
	if err := query(ctx, `SELECT seq FROM orders WHERE id = $1`, order).Scan(&cur); err != nil {
		return err
	}
	if seq > cur+1 {
		return errEarly
	}
	_, err = exec(ctx, `INSERT INTO misses (order_id, seq) VALUES ($1, $2)`, order, seq)
	return err
}

// start starts mode's consumer (and relay) on the queue and returns what
// stops them.
func (env *smEnv) start(ctx context.Context, mode, name, queueURL string, gaps *gapRecorder) (func() error, error) {
	switch mode {
	case modeUnsafe, modeHandSafe:
		return env.startPlain(ctx, mode, queueURL)
	}
	relay, relayStop, err := env.startRelay(ctx)
	if err != nil {
		return nil, err
	}
	observe := func(msgCtx context.Context, rep *ackgap.InboxReport) {
		if rep.Outcome == ackgap.OutcomeApplied {
			gaps.watch(msgCtx, rep.Committed)
		}
	}
	subCfg := &sqsbroker.SubscriberConfig{
		OptFns: env.sqs.optFns, Queue: name, AttemptTimeout: smAttempt, NackDelay: smNackDelay,
		CloseTimeout: e2eCloseTimeout, Workers: smWorkers,
	}
	// ackgap's handler: the guarded step as a guarded transition with its
	// two outbox rows; a refused step is retried when it came early
	// (standard queues reorder), dead-lettered (counted) otherwise.
	handler := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		order, seq, err := parseEvent(msg)
		if err != nil {
			return err
		}
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		charge := ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + id, Payload: msg.Payload}
		receipt := ackgap.OutboxEntry{Kind: "receipt", IdempotencyKey: "receipt:" + id, Payload: msg.Payload}
		_, err = ackgap.ApplyTransition(ctx, &ackgap.Transition{
			Table: "orders", Key: order, VersionColumn: "version",
			Guards: []ackgap.Guard{{Column: "seq", Op: ackgap.GuardEqual, Value: seq - 1}},
			Set:    []ackgap.Assignment{{Column: "seq", Value: seq}},
		}, &charge, &receipt)
		if errors.Is(err, ackgap.ErrTransitionRefused) {
			var cur int
			if qerr := tx.QueryRow(ctx, `SELECT seq FROM orders WHERE id = $1`, order).Scan(&cur); qerr == nil && seq > cur+1 {
				return errEarly
			}
		}
		return err
	}
	if mode == smRouter {
		sub, err := sqsbroker.NewSubscriber(ctx, subCfg, nil)
		if err != nil {
			return nil, errors.Join(err, relayStop())
		}
		r, err := router.New(env.store, &router.Config{DeadLetter: &env.dead, HandlerTimeout: smAttempt,
			Logger: watermill.NopLogger{}, InboxConfig: middleware.InboxConfig{Observer: observe, Dispatch: relay}})
		if err != nil {
			return nil, errors.Join(err, relayStop())
		}
		if err := r.AddHandler(kmConsumer, name, sub, handler); err != nil {
			return nil, errors.Join(err, relayStop())
		}
		return env.runRouter(ctx, r.Run, r.Running(), r.Close, relayStop)
	}
	bcfg := &batch.Config[pgx.Tx]{
		InboxConfig:  middleware.InboxConfig{Consumer: kmConsumer, Observer: observe, Dispatch: relay},
		Handler:      handler,
		BatchHandler: env.batchStep,
	}
	if !smFIFO(mode) {
		// A standard queue has no groups: the order key comes from the
		// payload, so a batch never applies two steps of one key at once.
		bcfg.KeyOf = func(msg *message.Message) (string, bool) {
			order, _, err := parseEvent(msg)
			return order, err == nil
		}
	}
	p, err := batch.New[pgx.Tx](env.store, bcfg)
	if err != nil {
		return nil, errors.Join(err, relayStop())
	}
	if mode == smLambda || mode == smLambdaFIFO {
		h, err := sqsbroker.LambdaBatchHandler(p.ProcessErrors, nil)
		if err != nil {
			return nil, errors.Join(err, relayStop())
		}
		lctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range smWorkers {
			wg.Go(func() { env.lambdaLoop(lctx, name, queueURL, h) })
		}
		return func() error { cancel(); wg.Wait(); return relayStop() }, nil
	}
	bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, subCfg, nil)
	if err != nil {
		return nil, errors.Join(err, relayStop())
	}
	done := make(chan error, 1)
	go func() { done <- bc.Run(ctx) }()
	return func() error { return errors.Join(bc.Close(), <-done, relayStop()) }, nil
}

// lambdaLoop is one poller of the SQS event source mapping as Lambda runs
// it: ReceiveMessage of up to 10 (long poll), the batch handed to the
// function as an events.SQSEvent, then the records not listed in
// BatchItemFailures deleted with one DeleteMessageBatch; the listed ones
// are left to come back when their visibility lapses (here made
// smLambdaFailVT seconds, as a function's retry would wait).
func (env *smEnv) lambdaLoop(ctx context.Context, name, queueURL string, h sqsbroker.LambdaHandlerFunc) {
	arn := "arn:aws:sqs:" + sqsRegion + ":000000000000:" + name
	for ctx.Err() == nil {
		out, err := env.sqs.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: smWaitSeconds,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil || len(out.Messages) == 0 {
			continue
		}
		ev := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
		for i, m := range out.Messages {
			rec := events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Md5OfBody: aws.ToString(m.MD5OfBody), Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
				Attributes: m.Attributes, MessageAttributes: map[string]events.SQSMessageAttribute{},
				EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: sqsRegion,
			}
			for k, a := range m.MessageAttributes {
				rec.MessageAttributes[k] = events.SQSMessageAttribute{StringValue: a.StringValue, BinaryValue: a.BinaryValue, DataType: aws.ToString(a.DataType)}
			}
			ev.Records[i] = rec
		}
		resp, err := h(ctx, ev)
		failed := map[string]bool{}
		if err != nil {
			for _, r := range ev.Records {
				failed[r.MessageId] = true
			}
		}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		var del []types.DeleteMessageBatchRequestEntry
		var back []types.ChangeMessageVisibilityBatchRequestEntry
		for i, m := range out.Messages {
			id := aws.String(strconv.Itoa(i))
			if failed[aws.ToString(m.MessageId)] {
				back = append(back, types.ChangeMessageVisibilityBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: smLambdaFailVT})
			} else {
				del = append(del, types.DeleteMessageBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle})
			}
		}
		bg := context.WithoutCancel(ctx)
		if len(del) > 0 {
			_, _ = env.sqs.client.DeleteMessageBatch(bg, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: del})
		}
		if len(back) > 0 {
			_, _ = env.sqs.client.ChangeMessageVisibilityBatch(bg, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queueURL), Entries: back})
		}
	}
}

// startPlain starts the hand-written consumers: smWorkers aws-sdk-go-v2
// receive loops of up to 10 messages each, every message handled inline,
// the handled ones deleted with one DeleteMessageBatch after the batch; a
// failed message is left for its visibility to lapse (made 1 s, as
// unsafe code that nacks would).
func (env *smEnv) startPlain(ctx context.Context, mode, queueURL string) (func() error, error) {
	handle := func(ctx context.Context, m types.Message) error {
		msg, err := sqsbroker.Marshaler{}.Unmarshal(&m)
		if err != nil {
			return err
		}
		if mode == modeHandSafe {
			msg.SetContext(ctx)
			return env.smHandSafe(msg)
		}
		order, seq, err := parseEvent(msg)
		if err != nil {
			return err
		}
		if err := smStep(ctx, poolExec(env.pool), env.pool.QueryRow, order, seq); err != nil {
			return err
		}
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		for _, k := range []string{"charge", "receipt"} {
			if err := env.prov.call(ctx, k+":"+id, msg.Payload); err != nil {
				return err
			}
		}
		return nil
	}
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range smWorkers {
		wg.Go(func() {
			for lctx.Err() == nil {
				out, err := env.sqs.client.ReceiveMessage(lctx, &sqs.ReceiveMessageInput{
					QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: smWaitSeconds,
					MessageAttributeNames: []string{"All"},
				})
				if err != nil || len(out.Messages) == 0 {
					continue
				}
				var del []types.DeleteMessageBatchRequestEntry
				var back []types.ChangeMessageVisibilityBatchRequestEntry
				for i, m := range out.Messages {
					id := aws.String(strconv.Itoa(i))
					if handle(lctx, m) == nil {
						del = append(del, types.DeleteMessageBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle})
					} else {
						back = append(back, types.ChangeMessageVisibilityBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 1})
					}
				}
				bg := context.WithoutCancel(lctx)
				if len(del) > 0 {
					_, _ = env.sqs.client.DeleteMessageBatch(bg, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: del})
				}
				if len(back) > 0 {
					_, _ = env.sqs.client.ChangeMessageVisibilityBatch(bg, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queueURL), Entries: back})
				}
			}
		})
	}
	relayDone := make(chan struct{})
	if mode == modeHandSafe {
		go func() { defer close(relayDone); env.handRelay(lctx) }()
	} else {
		close(relayDone)
	}
	return func() error { cancel(); wg.Wait(); <-relayDone; return nil }, nil
}

// smHandSafe is kmEnv.handSafe with an early step retried.
func (env *smEnv) smHandSafe(msg *message.Message) error {
	ctx := msg.Context()
	order, seq, err := parseEvent(msg)
	if err != nil {
		return err
	}
	id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
	tx, err := env.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, `INSERT INTO hand_inbox (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, kmConsumer, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return tx.Commit(ctx) // a duplicate
	}
	if err := smStep(ctx, txExec(tx), tx.QueryRow, order, seq); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO hand_outbox (kind, idempotency_key, payload) VALUES ('charge', $1, $3), ('receipt', $2, $3)`,
		"charge:"+id, "receipt:"+id, msg.Payload); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Markers of the comparison's section in RESULTS.md.
const (
	smBegin = "<!-- sqs-modes: begin (go run ./benchmarks -sqs-modes) -->"
	smEnd   = "<!-- sqs-modes: end -->"
)

// smMarkdown renders the comparison.
func smMarkdown(o smOptions, results []*kmResult, took time.Duration, load smLoad, brokerCounted bool) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("%s\n\n", smBegin)
	w("## SQS modes (issue #21)\n\n")
	w("Produced by `go run ./benchmarks -sqs-modes` on %s UTC in %s: %d events per run, %d keys (FIFO: %d message groups), PostgreSQL, fauxqs; "+
		"%d runs per cell, cells alternating (every mode once, then again). %s "+
		"The events/s cell is the median with the spread [min–max] of the runs.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), took.Round(time.Second), o.events, kmKeys, kmKeys, o.runs, load.note())
	w("Each run creates a fresh queue (visibility timeout %s), publishes every event at once (SendMessageBatch of 10, %d calls in flight, "+
		"a key's events in order: every key's first step, then every key's second; FIFO: MessageGroupId the key, MessageDeduplicationId the "+
		"event id), then waits until the provider carried out both effects of every event: events/s is events / (publish start → last effect). "+
		"Every run checks per-key order and exactly-once: every order at its last step, no guarded UPDATE at or behind its key's step (a "+
		"step applied twice or out of order), nothing dead-lettered, every effect key carried out. A standard queue does not keep order, so "+
		"in every mode a step that arrives before its key's previous one is not applied but retried (the message returns). "+
		"CPU is per event: this process (consumers, relay, publisher and provider together), the PostgreSQL backends of the consumer's pool, "+
		"those of the relay's, fauxqs%s.\n\n", smVisibility, smSendWorkers, map[bool]string{true: "", false: " (not found on this machine: 0)"}[brokerCounted])
	w("The consumers, %d receive loops each: `unsafe-inline` is a plain aws-sdk-go-v2 loop: ReceiveMessage (up to 10, long poll %d s), for each "+
		"message in turn the guarded UPDATE on the pool (autocommit) and the two HTTP calls (charge, receipt) inline, then one "+
		"DeleteMessageBatch of the handled ones (a failed one is made visible again after 1 s); no inbox, no transaction. `hand-safe` is the "+
		"same loop with the careful hand-written safe handler: inbox insert, guarded UPDATE and two outbox rows in one transaction per "+
		"message, and a polling relay (claims %d rows, calls them concurrently, marks them done). ackgap's modes run "+
		"`ackgap.ApplyTransition` of the guarded step with its two outbox rows and hand the rows to `outbox.Relay` in the same process "+
		"(direct dispatch); their deletes and nacks leave after the commit in the background, coalesced across messages and batches into "+
		"DeleteMessageBatch and ChangeMessageVisibilityBatch requests of up to 10: `router` is `sqsbroker.Subscriber` behind "+
		"`router.Router` (a transaction per message); `batched` is "+
		"`sqsbroker.BatchConsumer` running `batch.Processor` with a set-based batch handler (one UPDATE ... FROM unnest per round, "+
		"`ackgap.AddOutboxMany`), its %d receive loops (Pollers) handing batches to as many workers, one transaction per received batch; `Lambda batched` is "+
		"`sqsbroker.LambdaBatchHandler` with the same processor, called as the SQS event source mapping calls it: ReceiveMessage of 10, "+
		"the batch handed over as an `events.SQSEvent`, the records not in BatchItemFailures deleted with one DeleteMessageBatch, the "+
		"listed ones left (made visible after %d s). The FIFO rows are the same on a FIFO queue, the group as the ordering key. "+
		"ackgap's NackDelay is %s; its relay polls every %s (-sqs-modes-relay-poll; the hand-written one every %s). fauxqs returns at most one message per group per receive, which real SQS does not. "+
		"The harness's own SQS client (the publisher, the hand-written loops, the Lambda event source) has "+
		"`sqsbroker.BufferRequestBodies`, as every ackgap client has: without it the SDK now and then cannot read a fast "+
		"ReceiveMessage response and retries the call, and the lost response's messages stay invisible for the whole "+
		"visibility timeout (aws/aws-sdk-go-v2#2737), which stalled whole runs of those modes for 30 s; it takes an answer "+
		"that comes back before net/http has finished sending the request, which loopback gives and a network to SQS hardly does. "+
		"The ack gap is each applied message's commit to SQS's answer to its delete; the lease headroom is its lease deadline (as last "+
		"extended) minus that answer, for every message of every batch: p50 and p1 (99%% of the messages had at least that much; "+
		"negative: the delete came after the lease ran out, and SQS may have delivered the message again).\n\n",
		smWorkers, smWaitSeconds, kmHandClaim, smWorkers, smLambdaFailVT, smNackDelay, cmp.Or(o.relayPoll, outbox.PollIntervalDefault), kmPollEvery)
	w("| mode | provider | events/s | CPU µs/event: process + PostgreSQL consumer + PostgreSQL relay + fauxqs = total | ack gap p50 / p99 (ms) | lease headroom p50 / p1 (s) | correct |\n|---|---|---:|---:|---:|---:|---|\n")
	type key struct {
		mode  string
		delay time.Duration
	}
	groups := map[key][]*kmResult{}
	var order []key
	for _, r := range results {
		k := key{r.mode, r.delay}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	median := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		v = slices.Clone(v)
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	rate := func(k key) float64 {
		var v []float64
		for _, r := range groups[k] {
			v = append(v, r.rate())
		}
		return median(v)
	}
	cpu := func(k key) (self, pg, rpg, br float64) {
		var s, p, rp, b []float64
		for _, r := range groups[k] {
			n := float64(r.events)
			s = append(s, float64(r.cpuSelf.Microseconds())/n)
			p = append(p, float64(r.cpuPG.Microseconds())/n)
			rp = append(rp, float64(r.cpuRelayPG.Microseconds())/n)
			b = append(b, float64(r.cpuBroker.Microseconds())/n)
		}
		return median(s), median(p), median(rp), median(b)
	}
	slices.SortStableFunc(order, func(a, b key) int { return int(a.delay - b.delay) })
	for _, k := range order {
		rs := groups[k]
		lo, hi := rs[0].rate(), rs[0].rate()
		var gaps, heads []time.Duration
		var unconf int64
		ok := true
		for _, r := range rs {
			lo, hi = min(lo, r.rate()), max(hi, r.rate())
			gaps = append(gaps, r.ackGaps...)
			heads = append(heads, r.leaseHeadrooms...)
			unconf += r.unconfirmed
			ok = ok && r.correct()
		}
		self, pg, rpg, br := cpu(k)
		gapCol := "n/a (not observable)"
		if len(gaps) > 0 {
			slices.Sort(gaps)
			gapCol = fmt.Sprintf("%.1f / %.1f", ms(percentile(gaps, 0.5)), ms(percentile(gaps, 0.99)))
			if unconf > 0 {
				gapCol += fmt.Sprintf(" (%d unconfirmed)", unconf)
			}
		} else if unconf > 0 {
			gapCol = fmt.Sprintf("n/a (%d deletes unobserved)", unconf)
		}
		// The headroom's bad tail is its low end: p1 is what 99% of the
		// messages had at least.
		headCol := "n/a"
		if len(heads) > 0 {
			headCol = fmt.Sprintf("%.2f / %.2f", percentile(heads, 0.5).Seconds(), percentile(heads, 0.01).Seconds())
			if late := countNegative(heads); late > 0 {
				headCol += fmt.Sprintf(" (%d after the lease)", late)
			}
		}
		prov := "at once"
		if k.delay > 0 {
			prov = "after " + k.delay.String()
		}
		mark := "yes"
		if !ok {
			mark = "NO"
		}
		w("| %s | %s | %.0f [%.0f–%.0f] | %.0f + %.0f + %.0f + %.0f = %.0f | %s | %s | %s |\n", k.mode, prov, rate(k), lo, hi, self, pg, rpg, br, self+pg+rpg+br, gapCol, headCol, mark)
	}
	w("\n### Requests per event\n\nMedians of the runs: the SQS requests of every client of the process by operation (counted at the HTTP transport, " +
		"retries included; SendMessageBatch is the publisher's, 0.1 in every mode), and the round trips to PostgreSQL of the consumer's pool " +
		"and of the relay's (a pipelined batch is one), with the statements they carried.\n\n")
	w("| mode | provider | ReceiveMessage | DeleteMessageBatch | ChangeMessageVisibility(Batch) | DeleteMessage | SQL round trips (statements): consumer | relay |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range order {
		per := func(f func(r *kmResult) int64) float64 {
			var v []float64
			for _, r := range groups[k] {
				v = append(v, float64(f(r))/float64(r.events))
			}
			return median(v)
		}
		op := func(name string) float64 { return per(func(r *kmResult) int64 { return r.sqsCalls[name] }) }
		prov := "at once"
		if k.delay > 0 {
			prov = "after " + k.delay.String()
		}
		w("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.2f (%.2f) | %.3f (%.3f) |\n", k.mode, prov, op("ReceiveMessage"), op("DeleteMessageBatch"),
			op("ChangeMessageVisibilityBatch")+op("ChangeMessageVisibility"), op("DeleteMessage"),
			per(func(r *kmResult) int64 { return r.sql }), per(func(r *kmResult) int64 { return r.sqlStatements }),
			per(func(r *kmResult) int64 { return r.relaySQL }), per(func(r *kmResult) int64 { return r.relaySQLStatements }))
	}
	w("\n### Targets\n\n| target | measured | met |\n|---|---:|---|\n")
	ratio := func(a, b key) float64 {
		if rate(b) == 0 {
			return 0
		}
		return rate(a) / rate(b)
	}
	cpuTot := func(k key) float64 { s, p, rp, br := cpu(k); return s + p + rp + br }
	met := func(v, want float64) string {
		if v >= want {
			return "met"
		}
		return "**missed**"
	}
	at0 := func(m string) key { return key{m, 0} }
	at20 := func(m string) key { return key{m, 20 * time.Millisecond} }
	r := ratio(at0(smBatched), at0(modeUnsafe))
	w("| provider at once: batched ≥ 1.5× unsafe-inline | %.2f× | %s |\n", r, met(r, 1.5))
	if u := cpuTot(at0(modeUnsafe)); u > 0 {
		c := cpuTot(at0(smBatched)) / u
		w("| provider at once: batched CPU per event ≤ 0.85× unsafe-inline's | %.2f× | %s |\n", c, met(0.85, c))
	}
	r = ratio(at0(smRouter), at0(modeHandSafe))
	w("| provider at once: router ≥ 1.0× hand-safe | %.2f× | %s |\n", r, met(r, 1.0))
	r = ratio(at20(smBatched), at20(modeUnsafe))
	w("| provider after 20 ms: batched ≥ 10× unsafe-inline | %.2f× | %s |\n", r, met(r, 10))
	w("\n%s\n", smEnd)
	return b.String()
}

// batchStep is the batched modes' set-based handler: the guarded step of
// every message in one UPDATE ... FROM unnest and the outbox rows in one
// statement. When a step is refused (early on a standard queue, or at or
// behind its key's step) it fails, and batch.Processor runs the round's
// messages through the per-message handler instead, which tells the two
// apart.
func (env *smEnv) batchStep(ctx context.Context, tx pgx.Tx, msgs []*message.Message) error {
	orders := make([]string, len(msgs))
	seqs := make([]int32, len(msgs))
	rows := make([]ackgap.OutboxEntry, 0, 2*len(msgs))
	for i, msg := range msgs {
		order, seq, err := parseEvent(msg)
		if err != nil {
			return err
		}
		orders[i], seqs[i] = order, int32(seq)
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		for _, k := range []string{"charge", "receipt"} {
			rows = append(rows, ackgap.OutboxEntry{Kind: k, IdempotencyKey: k + ":" + id, Payload: msg.Payload,
				Consumer: kmConsumer, EventID: id})
		}
	}
	tag, err := tx.Exec(ctx, `UPDATE orders o SET seq = u.seq, version = o.version + 1
FROM unnest($1::text[], $2::int[]) AS u(id, seq) WHERE o.id = u.id AND o.seq = u.seq - 1`, orders, seqs)
	if err != nil {
		return err
	}
	if int(tag.RowsAffected()) != len(msgs) {
		return fmt.Errorf("%d of %d steps refused: the round runs message by message", len(msgs)-int(tag.RowsAffected()), len(msgs))
	}
	return ackgap.AddOutboxMany(ctx, rows)
}

// countNegative counts the durations below zero.
func countNegative(ds []time.Duration) int {
	n := 0
	for _, d := range ds {
		if d < 0 {
			n++
		}
	}
	return n
}
