package sqsbroker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-lambda-go/events"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// pgBackend is a migrated PostgreSQL store with a table "applied" that
// counts how many times each event was applied.
type pgBackend struct {
	store *pgxstore.Store
	pool  *pgxpool.Pool
}

func newPGBackend(t testing.TB) *pgBackend {
	t.Helper()
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 8)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE applied (event_id text PRIMARY KEY, n int NOT NULL)`)
	require.NoError(t, err)
	return &pgBackend{store: store, pool: pool}
}

// applyPG records one application of the message's event in tx.
func applyPG(ctx context.Context, tx pgx.Tx, _ *message.Message) error {
	id, _ := ackgap.EventIDFromContext(ctx)
	_, err := tx.Exec(ctx, `INSERT INTO applied (event_id, n) VALUES ($1, 1) ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, id)
	return err
}

func (b *pgBackend) applied(t testing.TB) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT event_id, n FROM applied`)
	require.NoError(t, err)
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	require.NoError(t, err)
	return out
}

func lambdaBatchSetup(t testing.TB, h func(ctx context.Context, tx pgx.Tx, msg *message.Message) error) (*pgBackend, sqsbroker.LambdaHandlerFunc) {
	t.Helper()
	b := newPGBackend(t)
	p, err := batch.New(b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"}, Handler: h})
	require.NoError(t, err)
	lh, err := sqsbroker.LambdaBatchHandler(p.ProcessErrors, nil)
	require.NoError(t, err)
	return b, lh
}

// TestLambdaBatchS12 (case S12, batched): a batch of five records in one
// transaction where E3's handler fails: the partial batch response lists
// exactly E3, and E1, E2, E4 and E5 are committed. When the whole batch is
// delivered again, E1, E2, E4 and E5 are duplicates and E3 applies: every
// event once.
func TestLambdaBatchS12(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	failE3 := true
	deliveries := map[string]string{}
	b, lh := lambdaBatchSetup(t, func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		mu.Lock()
		defer mu.Unlock()
		if d, ok := ackgap.DeliveryFromContext(ctx); ok {
			deliveries[id] = d.MessageID
		}
		if err := applyPG(ctx, tx, msg); err != nil {
			return err
		}
		if id == "E3" && failE3 {
			return fmt.Errorf("orders database: %w", ackgap.ErrStoreUnavailable)
		}
		return nil
	})
	ev := loadEvent(t, "testdata/sqs_event_s12.json")
	resp, err := lh(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[2].MessageId}}, resp.BatchItemFailures)
	require.Equal(t, map[string]int{"E1": 1, "E2": 1, "E4": 1, "E5": 1}, b.applied(t))
	require.Equal(t, ev.Records[1].MessageId, deliveries["E2"], "the handler sees the record's ackgap.Delivery")

	mu.Lock()
	failE3 = false
	mu.Unlock()
	resp, err = lh(context.Background(), loadEvent(t, "testdata/sqs_event_s12_redelivered.json"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, map[string]int{"E1": 1, "E2": 1, "E3": 1, "E4": 1, "E5": 1}, b.applied(t))
}

// TestLambdaBatchRejectedAndFailedCommit: a record without an event id is
// listed (the redrive policy dead-letters it); when the batch's commit
// fails every record is listed and nothing is applied.
func TestLambdaBatchRejectedAndFailedCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var cancelDuring bool
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b, lh := lambdaBatchSetup(t, func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		if cancelDuring {
			cancel() // the invocation ends before the commit
		}
		return applyPG(ctx, tx, msg)
	})
	ev := loadEvent(t, "testdata/sqs_event_s12.json")
	delete(ev.Records[1].MessageAttributes, ackgap.MetadataEventIDKey)
	resp, err := lh(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[1].MessageId}}, resp.BatchItemFailures)
	require.Equal(t, map[string]int{"E1": 1, "E3": 1, "E4": 1, "E5": 1}, b.applied(t))

	cancelDuring = true
	ev = loadEvent(t, "testdata/sqs_event_s12_redelivered.json")
	ev.Records[1].MessageAttributes["event_id"] = events.SQSMessageAttribute{DataType: "String", StringValue: ptr("E6")}
	resp, err = lh(cctx, ev)
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 5, "a batch that did not commit: every record is redelivered")
	require.Equal(t, map[string]int{"E1": 1, "E3": 1, "E4": 1, "E5": 1}, b.applied(t))
}

// TestLambdaBatchFIFO: a FIFO batch runs as one transaction with each
// message group as a key. Records E1..E7 over groups A, B and C, with
// E3 (group A, its second record) failing: the partial batch response
// lists exactly E3 and the later records of group A (E4, E6); E1 and the
// records of groups B and C commit, in order within each group (rounds);
// E4 and E6 are never run. Delivered again (as SQS would: group A from
// E3 on, with E3 now working), group A finishes in order.
func TestLambdaBatchFIFO(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var runs []string
	failE3 := true
	b, lh := lambdaBatchSetup(t, func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		mu.Lock()
		runs = append(runs, id)
		fail := id == "E3" && failE3
		mu.Unlock()
		if fail {
			return context.Canceled
		}
		return applyPG(ctx, tx, msg)
	})
	tmpl := loadEvent(t, "testdata/sqs_event_fifo.json").Records[0]
	rec := func(id, group string) events.SQSMessage {
		r := tmpl
		r.MessageId = "m-" + id
		r.Attributes = map[string]string{"ApproximateReceiveCount": "1", "MessageGroupId": group, "MessageDeduplicationId": id}
		r.MessageAttributes = map[string]events.SQSMessageAttribute{"event_id": {StringValue: ptr(id), DataType: "String"}}
		return r
	}
	groupOf := map[string]string{"E1": "A", "E2": "B", "E3": "A", "E4": "A", "E5": "B", "E6": "A", "E7": "C"}
	ids := []string{"E1", "E2", "E3", "E4", "E5", "E6", "E7"}
	var ev events.SQSEvent
	for _, id := range ids {
		ev.Records = append(ev.Records, rec(id, groupOf[id]))
	}
	resp, err := lh(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []events.SQSBatchItemFailure{
		{ItemIdentifier: "m-E3"}, {ItemIdentifier: "m-E4"}, {ItemIdentifier: "m-E6"},
	}, resp.BatchItemFailures, "the failed record and the later ones of its group, nothing else")
	require.Equal(t, map[string]int{"E1": 1, "E2": 1, "E5": 1, "E7": 1}, b.applied(t))
	mu.Lock()
	require.NotContains(t, runs, "E4", "held back, not run")
	require.NotContains(t, runs, "E6", "held back, not run")
	require.Less(t, slices.Index(runs, "E1"), slices.Index(runs, "E3"), "group A in order")
	require.Less(t, slices.Index(runs, "E2"), slices.Index(runs, "E5"), "group B in order")
	failE3, runs = false, nil
	mu.Unlock()

	ev.Records = []events.SQSMessage{rec("E3", "A"), rec("E4", "A"), rec("E6", "A")}
	resp, err = lh(context.Background(), ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, []string{"E3", "E4", "E6"}, runs, "group A from E3 on, in order")
	require.Equal(t, map[string]int{"E1": 1, "E2": 1, "E3": 1, "E4": 1, "E5": 1, "E6": 1, "E7": 1}, b.applied(t))
}

// TestLambdaBatchConfigAndDeadline: invalid config is refused; a batch
// whose deadline is closer than the margin is not started.
func TestLambdaBatchConfigAndDeadline(t *testing.T) {
	t.Parallel()
	_, err := sqsbroker.LambdaBatchHandler(nil, &sqsbroker.LambdaConfig{DeadlineMargin: -1})
	require.ErrorContains(t, err, "invalid config: batch processor is nil")
	require.ErrorContains(t, err, "DeadlineMargin is -1ns")

	calls := 0
	b, lh := lambdaBatchSetup(t, func(context.Context, pgx.Tx, *message.Message) error { calls++; return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	resp, err := lh(ctx, loadEvent(t, "testdata/sqs_event_s12.json"))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 5)
	require.Zero(t, calls)
	require.Empty(t, b.applied(t))

	ev := loadEvent(t, "testdata/sqs_event_s12.json")
	ev.Records[3].MessageId = ""
	_, err = lh(context.Background(), ev)
	require.ErrorContains(t, err, "record 3 has no messageId")
}

func ptr[T any](v T) *T { return &v }
