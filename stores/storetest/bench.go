package storetest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// benchRows is the number of state rows the benchmarks spread their
// transitions over (one per goroutine in the parallel ones).
const benchRows = 256

// RunBenchmarks is the store benchmark every store runs on the same
// workload, so their numbers compare (conventions.md, rule 19):
//
//	func BenchmarkStore(b *testing.B) { storetest.RunBenchmarks(b, benchHarness) }
//
// setup is called once per sub-benchmark and returns a fresh, migrated
// store. The sub-benchmarks, one message each per iteration:
//
//   - Inbox: BeginInboxDeferred, InboxVerdictTx and CommitTx (an empty handler);
//   - InboxProgress: the same with a progress row (BeginInboxParams.Progress,
//     one partition whose watermark moves up each message), what
//     kafkabroker.SubscriberConfig.Progress adds to every transaction;
//   - Duplicate: the same for an event already in the inbox;
//   - Billing: the inbox transaction, a guarded transition (applied), two outbox rows
//     inserted at once (InsertOutboxManyTx, one row each), CommitTx: the
//     billing example's transaction;
//   - BillingQueued: the same with the outbox rows queued with
//     stores.Store.QueueOutboxTx (inserted at once by a store that does
//     not pipeline);
//   - BillingParallel: BillingQueued from 8 goroutines per CPU, each on
//     its own state row.
func RunBenchmarks[TTx any](b *testing.B, setup func(b *testing.B) *Harness[TTx]) {
	b.Run("Inbox", func(b *testing.B) {
		h := setup(b)
		ctx := context.Background()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			res := benchBegin(b, h, "e"+strconv.Itoa(i))
			if err := h.Store.CommitTx(ctx, res.Tx); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("InboxProgress", func(b *testing.B) {
		h := setup(b)
		ctx := context.Background()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			res, err := beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: "bench", EventID: "e" + strconv.Itoa(i), PayloadHash: benchHash,
				Progress: &stores.Progress{Topic: "bench", Partition: 0, Watermark: int64(i)}})
			if err != nil || res.Duplicate {
				b.Fatalf("want a new row, got %+v, %v", res, err)
			}
			if err := h.Store.CommitTx(ctx, res.Tx); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("Duplicate", func(b *testing.B) {
		h := setup(b)
		ctx := context.Background()
		if err := h.Store.CommitTx(ctx, benchBegin(b, h, "e1").Tx); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			res, err := beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: "bench", EventID: "e1", PayloadHash: benchHash})
			if err != nil || !res.Duplicate {
				b.Fatalf("want a duplicate, got %+v, %v", res, err)
			}
		}
	})

	billing := func(b *testing.B, queue bool) {
		h := setup(b)
		seedBenchRows(b, h)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := benchBilling(h, queue, i, i%benchRows); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("Billing", func(b *testing.B) { billing(b, false) })
	b.Run("BillingQueued", func(b *testing.B) { billing(b, true) })

	b.Run("BillingParallel", func(b *testing.B) {
		h := setup(b)
		seedBenchRows(b, h)
		var next, goroutines atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			row := int(goroutines.Add(1)-1) % benchRows
			for pb.Next() {
				if err := benchBilling(h, true, int(next.Add(1)), row); err != nil {
					b.Error(err) // not Fatal: this is not the benchmark's goroutine
					return
				}
			}
		})
	})
}

var benchHash = stores.PayloadHash([]byte(`{"order_id":"o1"}`))

func benchBegin[TTx any](b *testing.B, h *Harness[TTx], eventID string) *stores.BeginInboxResult[TTx] {
	res, err := beginInbox(context.Background(), h.Store, &stores.BeginInboxParams{Consumer: "bench", EventID: eventID, PayloadHash: benchHash})
	if err != nil {
		b.Fatal(err)
	}
	if res.Duplicate {
		b.Fatalf("event %s: unexpected duplicate", eventID)
	}
	return res
}

// seedBenchRows creates the state table with benchRows rows r0, r1, ...
// in state "a".
func seedBenchRows[TTx any](b *testing.B, h *Harness[TTx]) {
	ctx := context.Background()
	if err := h.Exec(ctx, createStateTable); err != nil {
		b.Fatal(err)
	}
	values := make([]string, benchRows)
	for i := range values {
		values[i] = fmt.Sprintf("('r%d', 'a')", i)
	}
	if err := h.Exec(ctx, `INSERT INTO "Order ""Items""" (id, status) VALUES `+strings.Join(values, ", ")); err != nil {
		b.Fatal(err)
	}
}

// benchBilling runs message i: inbox row, a transition of state row that
// always applies (from a or b to the other), two outbox rows (queued with
// QueueOutboxTx when queue is set), commit.
func benchBilling[TTx any](h *Harness[TTx], queue bool, i, row int) error {
	ctx := context.Background()
	n := strconv.Itoa(i)
	res, err := beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: "bench", EventID: "e" + n, PayloadHash: benchHash})
	if err != nil {
		return err
	}
	if res.Duplicate {
		return fmt.Errorf("event e%s: unexpected duplicate", n)
	}
	err = func() error {
		to := "a"
		if i%2 == 1 {
			to = "b"
		}
		out, err := h.Store.TransitionIfStateTx(ctx, res.Tx, &ackgap.Transition{
			Table: stateTable, Key: "r" + strconv.Itoa(row), From: []string{"a", "b"}, To: to, VersionColumn: "version",
		})
		if err != nil {
			return err
		}
		if !out.Applied() {
			return fmt.Errorf("transition not applied: %+v", out)
		}
		headers := map[string]string{"content-type": "application/json"}
		for _, p := range []ackgap.OutboxEntry{
			{Kind: "charge", IdempotencyKey: "charge:" + n, Payload: []byte(`{"order_id":"` + n + `","amount_cents":100}`), Headers: headers, Consumer: "bench", EventID: "e" + n},
			{Kind: "email.receipt", IdempotencyKey: "receipt:" + n, Payload: []byte(`{"order_id":"` + n + `","email":"a@example.com"}`), Headers: headers, Consumer: "bench", EventID: "e" + n},
		} {
			if queue {
				err = h.Store.QueueOutboxTx(ctx, res.Tx, &p)
			} else {
				_, err = insertOutbox(ctx, h.Store, res.Tx, p)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		_ = h.Store.RollbackTx(ctx, res.Tx)
		return err
	}
	return h.Store.CommitTx(ctx, res.Tx)
}
