package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
)

// The batched workloads: the billing transaction for a whole batch of
// messages in one transaction (package batch), with a set-based
// BatchHandler, in batches of 100 and of 10 (an SQS receive).
const (
	kindBatched   kind = "safe-batched"
	kindBatched10 kind = "safe-batched-10"
)

// batchSize is the messages per batch of a batched workload.
func batchSize(k kind) int {
	if k == kindBatched10 {
		return 10
	}
	return 100
}

// targetBatchedOverUnsafe is issue 6's target for the batched mode:
// safe-batched at least twice as fast as unsafe, per message.
const targetBatchedOverUnsafe = 2.0

// runBatched runs a batched workload: one goroutine per partition takes
// its messages in order (message i to partition i mod concurrency, as the
// routed workloads deal them), batchSize(c.kind) at a time, and runs each
// batch through batch.Processor.Process, as sqsbroker.BatchConsumer and
// LambdaBatchHandler do after a receive. There is no broker: GoChannel
// hands out one message at a time, which is what batching removes. A
// failed or rejected message counts as an error.
func runBatched(ctx context.Context, c *cell, d time.Duration) (result, error) {
	process, err := batchProcessor(c.be)
	if err != nil {
		return result{}, err
	}
	size := batchSize(c.kind)
	var errs errCounter
	sent := make([]int, c.concurrency)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := readCPU(c.be)
	start := time.Now()
	var wg sync.WaitGroup
	for p := range c.concurrency {
		wg.Go(func() {
			var idx []int
			for i := p; i < len(c.plan.msgs); i += c.concurrency {
				idx = append(idx, i)
			}
			for lo := 0; lo < len(idx) && time.Since(start) < d; lo += size {
				chunk := idx[lo:min(lo+size, len(idx))]
				msgs := make([]*message.Message, len(chunk))
				for j, i := range chunk {
					ev := &c.plan.events[c.plan.msgs[i]]
					msgs[j] = message.NewMessage(strconv.Itoa(i), ev.payload)
					msgs[j].Metadata.Set(eventIDKey, ev.eventID)
				}
				res, err := process(ctx, msgs)
				if err != nil {
					errs.add(err)
					return
				}
				for _, m := range res.Messages {
					if m.Outcome == ackgap.OutcomeFailed || m.Outcome == ackgap.OutcomeRejected {
						errs.add(m.Err)
					}
				}
				sent[p] += len(chunk)
			}
		})
	}
	wg.Wait()
	m := meter{elapsed: time.Since(start)}
	cpu1 := readCPU(c.be)
	runtime.ReadMemStats(&after)
	m.mallocs, m.bytes = after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc
	m.cpuSelf = cpu1.self - cpu0.self
	if cpu0.serverOK && cpu1.serverOK {
		m.cpuSrv = cpu1.server - cpu0.server
	}
	return finish(c, sent, m, 0, &errs), nil
}

// batchProcessor returns the Process of a batch.Processor on be's store
// with the set-based billing handler, and chargeOrder (its outbox rows
// queued) as the per-message fallback.
func batchProcessor(be backend) (func(context.Context, []*message.Message) (*batch.Result, error), error) {
	switch b := be.(type) {
	case *postgres:
		p, err := batch.New(b.store, &batch.Config[pgx.Tx]{
			InboxConfig: middleware.InboxConfig{Consumer: consumer}, Handler: chargeOrder[pgx.Tx](true),
			BatchHandler: chargeOrders(b.store, func(ctx context.Context, tx pgx.Tx, ids []string) ([]string, error) {
				rows, _ := tx.Query(ctx, pgChargeMany, statusCharging, ids, statusPending)
				return pgx.CollectRows(rows, pgx.RowTo[string])
			}),
		})
		if err != nil {
			return nil, err
		}
		return p.Process, nil
	case *sqlite:
		p, err := batch.New(b.store, &batch.Config[*sql.Tx]{
			InboxConfig: middleware.InboxConfig{Consumer: consumer}, Handler: chargeOrder[*sql.Tx](true),
			BatchHandler: chargeOrders(b.store, func(ctx context.Context, tx *sql.Tx, ids []string) ([]string, error) {
				js, err := json.Marshal(ids)
				if err != nil {
					return nil, err
				}
				rows, err := tx.QueryContext(ctx, liteChargeMany, statusCharging, string(js), statusPending)
				if err != nil {
					return nil, err
				}
				defer rows.Close()
				var out []string
				for rows.Next() {
					var id string
					if err := rows.Scan(&id); err != nil {
						return nil, err
					}
					out = append(out, id)
				}
				return out, rows.Err()
			}),
		})
		if err != nil {
			return nil, err
		}
		return p.Process, nil
	case *mariadb:
		p, err := batch.New(b.store, &batch.Config[*sql.Tx]{
			InboxConfig: middleware.InboxConfig{Consumer: consumer}, Handler: chargeOrder[*sql.Tx](true),
			BatchHandler: chargeOrders(b.store, myChargeOrders),
		})
		if err != nil {
			return nil, err
		}
		return p.Process, nil
	}
	return nil, fmt.Errorf("batched workloads: no batch store for %s", be.name())
}

// The set-based guarded transition of the batched workloads: one UPDATE
// for the whole batch, guarded by state in its WHERE, returning the orders
// it moved.
const (
	pgChargeMany = `UPDATE "orders" AS o SET "status" = $1, "version" = o."version" + 1
FROM unnest($2::text[]) AS u(id) WHERE o."id" = u.id AND o."status" = $3 RETURNING o."id"`
	liteChargeMany = `UPDATE "orders" SET "status" = ?1, "version" = "version" + 1
FROM json_each(?2) AS u WHERE "orders"."id" = u.value AND "status" = ?3 RETURNING "orders"."id"`
)

// myChargeOrders is the set-based guarded transition on MariaDB: lock and
// read the batch's pending orders (myChargeManyLock), then move them
// (myChargeMany); two statements, as there is no UPDATE ... RETURNING.
func myChargeOrders(ctx context.Context, tx *sql.Tx, ids []string) ([]string, error) {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	args := make([]any, 0, len(ids)+2)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(myChargeManyLock, marks), append(args, statusPending)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var moved []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		moved = append(moved, id)
	}
	if err := rows.Err(); err != nil || len(moved) == 0 {
		return nil, err
	}
	upd := append([]any{statusCharging}, args...)
	res, err := tx.ExecContext(ctx, fmt.Sprintf(myChargeMany, marks), append(upd, statusPending)...)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, err
	} else if n != int64(len(moved)) {
		return nil, fmt.Errorf("mariadb: moved %d orders, locked %d", n, len(moved))
	}
	return moved, nil
}

// chargeOrders is chargeOrder for a whole batch: decode every payload,
// move every order pending -> charging with one guarded UPDATE
// (transition), and record the charge and receipt of each order it moved
// with one InsertOutboxManyTx. An order it did not move was already
// charging (applied by an earlier event): nothing to record, as in
// chargeOrder. A payload that does not decode fails the batch, which then
// falls back to chargeOrder per message (which dead-letters that one).
func chargeOrders[TTx any](store stores.Store[TTx], transition func(ctx context.Context, tx TTx, orderIDs []string) ([]string, error)) batch.BatchHandlerFunc[TTx] {
	return func(ctx context.Context, tx TTx, msgs []*message.Message) error {
		byOrder := make(map[string]*orderPlaced, len(msgs))
		eventOf := make(map[string]string, len(msgs))
		ids := make([]string, len(msgs))
		for i, msg := range msgs {
			ev, err := decode(msg)
			if err != nil {
				return err
			}
			ids[i] = ev.OrderID
			byOrder[ev.OrderID] = &ev
			eventOf[ev.OrderID] = msg.Metadata.Get(eventIDKey)
		}
		moved, err := transition(ctx, tx, ids)
		if err != nil {
			return err
		}
		rows := make([]ackgap.OutboxEntry, 0, 2*len(moved))
		for _, id := range moved {
			chargeKey, charge, receiptKey, receipt, err := effects(byOrder[id])
			if err != nil {
				return err
			}
			rows = append(rows,
				ackgap.OutboxEntry{Kind: kindCharge, IdempotencyKey: chargeKey, Payload: charge, Headers: orders.OutboxHeaders, Consumer: consumer, EventID: eventOf[id]},
				ackgap.OutboxEntry{Kind: kindReceipt, IdempotencyKey: receiptKey, Payload: receipt, Headers: orders.OutboxHeaders, Consumer: consumer, EventID: eventOf[id]})
		}
		_, err = store.InsertOutboxManyTx(ctx, tx, &stores.OutboxInsertManyParams{Rows: rows})
		return err
	}
}
