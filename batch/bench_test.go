package batch_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
)

// BenchmarkProcess measures Process per message on each store, for
// batches of 10 (an SQS receive) and 100, with the per-message Handler
// and with a set-based BatchHandler; each message writes one outbox row.
func BenchmarkProcess(b *testing.B) {
	b.Run("postgres", func(b *testing.B) { benchProcess(b, pgEnv) })
	b.Run("sqlite", func(b *testing.B) { benchProcess(b, sqliteEnv) })
}

func benchProcess[TTx any](b *testing.B, newEnv func(t testing.TB) *env[TTx]) {
	for _, size := range []int{10, 100} {
		for _, mode := range []string{"Handler", "BatchHandler"} {
			b.Run(fmt.Sprintf("%s/%d", mode, size), func(b *testing.B) {
				e := newEnv(b)
				cfg := batch.Config[TTx]{InboxConfig: middleware.InboxConfig{Consumer: "bench"}}
				if mode == "Handler" {
					cfg.Handler = func(ctx context.Context, _ TTx, msg *message.Message) error {
						return ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: msg.UUID, Payload: msg.Payload})
					}
				} else {
					cfg.BatchHandler = func(ctx context.Context, tx TTx, msgs []*message.Message) error {
						rows := make([]ackgap.OutboxEntry, len(msgs))
						for i, msg := range msgs {
							rows[i] = ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: msg.UUID, Payload: msg.Payload, Consumer: "bench",
								EventID: msg.Metadata.Get(ackgap.MetadataEventIDKey)}
						}
						_, err := e.store.InsertOutboxManyTx(ctx, tx, &stores.OutboxInsertManyParams{Rows: rows})
						return err
					}
				}
				p, err := batch.New(e.store, &cfg)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				msgs := make([]*message.Message, size)
				n := 0
				b.ReportAllocs()
				for b.Loop() {
					for i := range msgs {
						n++
						id := "e" + strconv.Itoa(n)
						msgs[i] = message.NewMessage(id, []byte(`{"order":"`+id+`"}`))
						msgs[i].Metadata.Set(ackgap.MetadataEventIDKey, id)
					}
					res, err := p.Process(ctx, msgs)
					if err != nil || res.Count(ackgap.OutcomeApplied) != size {
						b.Fatalf("want %d applied, got %v, %v", size, res.Messages[0], err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
			})
		}
	}
}
