// Package poisonloop holds consumers outside Watermill's router that a
// message which can never succeed stops for good.
package poisonloop

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"os"

	"github.com/IBM/sarama"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/segmentio/kafka-go"
)

type order struct{ ID string }

func save(ctx context.Context, o order) error {
	if o.ID == "" {
		return errors.New("no id")
	}
	return nil
}

// readLoop ends the process on a message that does not decode, and on a
// failed save (field trial wave 13, consumer-update-media H2: a restart
// fetches the same message first). A failed ReadMessage or commit is the
// broker's, not the message's: not reported. Nor is the set-up.
func readLoop(ctx context.Context) {
	cfg, err := os.ReadFile("reader.json")
	if err != nil {
		log.Fatal(err) // set-up, once per start
	}
	_ = cfg
	r := kafka.NewReader(kafka.ReaderConfig{})
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			log.Fatalf("fetch: %v", err)
		}
		var o order
		if err := json.Unmarshal(m.Value, &o); err != nil {
			log.Fatalf("decode: %v", err) // want `log.Fatalf on a message's failure \(json.Unmarshal, line \d+\) on the consumer path of kafka-go reader loop readLoop ends the process: .*crash-loops`
		}
		if err := save(ctx, o); err != nil {
			os.Exit(1) // want `os.Exit on a message's failure \(save, line \d+\)`
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			log.Fatal(err)
		}
	}
}

// returnOnDecode stops the loop at a message that does not decode.
func returnOnDecode(ctx context.Context, r *kafka.Reader) error {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return err
		}
		var o order
		err = json.Unmarshal(m.Value, &o)
		if err != nil {
			return err // want `returns from the receive loop when json.Unmarshal fails \(line \d+\): a message that does not decode never will, so the loop stops consuming at it`
		}
		if err := save(ctx, o); err != nil {
			return err // a failed write: redelivered, as errack asks
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// skipUndecodable logs and commits a message that does not decode: clean.
func skipUndecodable(ctx context.Context, r *kafka.Reader) error {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return err
		}
		var o order
		if err := json.Unmarshal(m.Value, &o); err != nil {
			log.Printf("skip %q: %v", m.Value, err)
		} else if err := save(ctx, o); err != nil {
			return err
		}
		_ = r.CommitMessages(ctx, m)
	}
}

type claims struct{}

func (claims) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (claims) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim returns at a message that does not decode: the session ends
// and starts again at the same message.
func (claims) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		var o order
		if err := json.Unmarshal(msg.Value, &o); err != nil {
			return err // want `returns from the receive loop when json.Unmarshal fails .*Sarama ends the session`
		}
		sess.MarkMessage(msg, "")
	}
	return nil
}

// sqsLoop panics in a worker goroutine on a failed save.
func sqsLoop(ctx context.Context, c *sqs.Client, url *string) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			go func(m sqs.Message) {
				if err := save(ctx, order{ID: *m.Body}); err != nil {
					panic(err) // want `panic on a message's failure \(save, line \d+\) .*visibility timeout`
				}
				_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
			}(m)
		}
	}
}

// decodeRecord is reached from the Lambda handler below and ends the
// process on a record it was given that does not decode (field trial wave
// 13, screwdriver H2).
func decodeRecord(rec events.KafkaRecord) order {
	var o order
	if err := json.Unmarshal([]byte(rec.Value), &o); err != nil {
		log.Fatal(err) // want `log.Fatal on a message's failure \(json.Unmarshal, line \d+\) .*Lambda retries the whole batch in place`
	}
	return o
}

// loadRules decodes a file, not a record: its failure is the set-up's,
// wherever it is called from. Clean.
func loadRules() map[string]string {
	b, _ := os.ReadFile("rules.json")
	var rules map[string]string
	if err := json.Unmarshal(b, &rules); err != nil {
		log.Fatal(err)
	}
	return rules
}

func handleKafka(ctx context.Context, ev events.KafkaEvent) error {
	rules := loadRules()
	_ = rules
	for _, records := range ev.Records {
		for _, rec := range records {
			_ = save(ctx, decodeRecord(rec))
		}
	}
	return nil
}

func heartbeat() error { return nil }

// watchedLoop starts a watchdog before its loop: the watchdog's exit is
// not a message's. Clean.
func watchedLoop(ctx context.Context, r *kafka.Reader) {
	go func() {
		if err := heartbeat(); err != nil {
			log.Fatal(err)
		}
	}()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// elseIf ends the process in an else-if branch whose error came from the
// decode in its own init.
func elseIf(ctx context.Context, r *kafka.Reader) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		var o order
		if len(m.Value) == 0 {
			continue
		} else if err := json.Unmarshal(m.Value, &o); err != nil {
			log.Fatal(err) // want `log.Fatal on a message's failure \(json.Unmarshal`
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// pooled starts its workers before the fetch loop: a worker's exit on a
// message it cannot decode is a message's failure (a new user's report).
func pooled(ctx context.Context, r *kafka.Reader) {
	jobs := make(chan kafka.Message)
	for i := 0; i < 4; i++ {
		go func() {
			for m := range jobs {
				var o order
				if err := json.Unmarshal(m.Value, &o); err != nil {
					log.Fatal(err) // want `log.Fatal on a message's failure \(json.Unmarshal, line \d+\)`
				}
			}
		}()
	}
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		jobs <- m
	}
}

// worker is a declared worker: its exit on a message it took from the
// channel and cannot decode is reported too.
func worker(jobs <-chan kafka.Message) {
	for m := range jobs {
		var o order
		if err := json.Unmarshal(m.Value, &o); err != nil {
			log.Fatal(err) // want `log.Fatal on a message's failure \(json.Unmarshal, line \d+\)`
		}
	}
}

func pooledDecl(ctx context.Context, r *kafka.Reader) {
	jobs := make(chan kafka.Message)
	go worker(jobs)
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		jobs <- m
	}
}

// wrappedLoop sets up, then calls a function that receives once per turn
// (wave 18, Pennsieve/workflow-manager): the set-up's exits run once at
// start, not per message; the exit on processOnce's failure is per message.
func wrappedLoop(ctx context.Context, c *sqs.Client, url *string) {
	if err := os.MkdirAll("/tmp/work", 0o755); err != nil {
		os.Exit(1)
	}
	for {
		if err := processOnce(ctx, c, url); err != nil {
			log.Fatalf("processing: %v", err) // want `log.Fatalf on a message's failure \(processOnce, line \d+\)`
		}
	}
}

func processOnce(ctx context.Context, c *sqs.Client, url *string) error {
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
	if err != nil {
		return err
	}
	for _, m := range out.Messages {
		var o order
		if err := json.Unmarshal([]byte(*m.Body), &o); err != nil {
			return err
		}
		_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
	}
	return nil
}

// season is a consumer whose first step reads the active season from a
// search index (field trial wave 34, Internship): no message makes that
// lookup fail, so its Fatal is a dependency's outage, not a message that
// always fails. The store's failure on the message's values is reported.
type season struct {
	index  *searchIndex
	client *kafka.Reader
}

type searchIndex struct{}

func (s *searchIndex) Active(ctx context.Context) (string, error) { return "s1", nil }

func (c *season) run(ctx context.Context) {
	for {
		m, err := c.client.FetchMessage(ctx)
		if err != nil {
			continue
		}
		active, err := c.index.Active(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if err := save(ctx, order{ID: active + string(m.Value)}); err != nil {
			log.Fatal(err) // want `log.Fatal on a message's failure \(save, line \d+\)`
		}
		_ = c.client.CommitMessages(ctx, m)
	}
}

// MustAmount parses an amount and panics on failure by contract; its
// callers give it constants (field trial, wave 60: astra's
// MustNewCoinFromString("aastra", "0")): not a message's failure.
func MustAmount(s string) int {
	n, err := parseAmount(s)
	if err != nil {
		panic(err)
	}
	return n
}

func parseAmount(s string) (int, error) {
	if s == "" {
		return 0, errors.New("empty amount")
	}
	return len(s), nil
}

// feeLoop charges a constant fee per order: MustAmount("0") is no poison.
func feeLoop(ctx context.Context, r *kafka.Reader) error {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return err
		}
		if MustAmount("0") > 0 {
			continue
		}
		if err := save(ctx, order{ID: string(m.Value)}); err != nil {
			return err
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			return err
		}
	}
}
