package router_test

// Tests drawn from ../shared/cases (real reports of duplicate processing).
// Each stands for a kind of fault; the case id is in the test name.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

type deposit struct {
	Account string `json:"account"`
	Amount  int    `json:"amount"`
}

// depositHandler adds to a balance (not idempotent by itself: only the
// inbox stands between a second copy and a second deposit) and writes an
// outbox row, then sleeps inside the transaction so copies overlap.
var depositHandler = router.JSON(func(ctx context.Context, tx pgx.Tx, msg *message.Message, d deposit) error {
	if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance + $1 WHERE id = $2`, d.Amount, d.Account); err != nil {
		return err
	}
	time.Sleep(50 * time.Millisecond)
	id, _ := ackgap.EventIDFromContext(ctx)
	err := ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "notify", IdempotencyKey: "deposit:" + id, Payload: msg.Payload})
	return err
})

func pgSetup(t *testing.T) (*pgxstore.Store, func() int) {
	t.Helper()
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 0)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE accounts (id text PRIMARY KEY, balance integer NOT NULL); INSERT INTO accounts VALUES ('A1', 0)`)
	require.NoError(t, err)
	return store, func() int {
		var b int
		require.NoError(t, pool.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = 'A1'`).Scan(&b))
		return b
	}
}

func depositMsg(eventID string, amount int) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(fmt.Sprintf(`{"account":"A1","amount":%d}`, amount)))
	if eventID != "" {
		msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
	}
	return msg
}

// TestS13CheckThenActRace: E1 delivered twice, 5 ms apart, to two handler
// goroutines (two consumer instances). One commits; the other waits on the
// inbox key, finds it, rolls back and is acked as a duplicate. There is no
// pre-check SELECT at all: the unique insert is the check.
func TestS13CheckThenActRace(t *testing.T) {
	store, balance := pgSetup(t)
	var mu sync.Mutex
	var outcomes []ackgap.Outcome
	chain := func() message.HandlerFunc {
		inbox, err := middleware.Inbox[pgx.Tx](store, &middleware.InboxConfig{Consumer: "c1",
			Observer: func(_ context.Context, r *ackgap.InboxReport) {
				mu.Lock()
				outcomes = append(outcomes, r.Outcome)
				mu.Unlock()
			}})
		require.NoError(t, err)
		return inbox(router.Adapt(depositHandler))
	}
	instanceA, instanceB := chain(), chain()
	errs := make(chan error, 2)
	go func() { _, err := instanceA(depositMsg("E1", 100)); errs <- err }()
	time.Sleep(5 * time.Millisecond)
	go func() { _, err := instanceB(depositMsg("E1", 100)); errs <- err }()
	require.NoError(t, <-errs, "both deliveries are acked")
	require.NoError(t, <-errs, "both deliveries are acked")
	require.Equal(t, 100, balance())
	require.ElementsMatch(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate}, outcomes)
	rows, err := store.ListOutbox(context.Background(), &stores.OutboxListParams{})
	require.NoError(t, err)
	require.Len(t, rows.Rows, 1)
}

// TestS14SameIDDifferentPayload: E1 {100} applied; E1 {250} is not applied
// and not a plain duplicate: dead-lettered with id_reuse_payload_mismatch;
// an exact copy of the first is a duplicate.
func TestS14SameIDDifferentPayload(t *testing.T) {
	store, balance := pgSetup(t)
	b := runRouter(t, store, router.Config{})
	b.pub(t, depositMsg("E1", 100))
	b.pub(t, depositMsg("E1", 250))
	dl := b.deadLetter(t)
	require.Equal(t, ackgap.ReasonEventIDConflict, dl.Metadata.Get(ackgap.MetadataDeadLetterReason))
	b.pub(t, depositMsg("E1", 100))
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeRejected, ackgap.OutcomeDuplicate}, b.wait(t, 3))
	require.Equal(t, 100, balance())
}

// TestS15MissingOrUnstableID: the id comes from the body when the producer
// put it there (variant a), deterministically, so a replay is a duplicate
// and two records never collide on an empty id; with no id anywhere
// (variant b, no transport fallback configured) the record is
// dead-lettered with missing_event_id, never given a random id.
func TestS15MissingOrUnstableID(t *testing.T) {
	store, balance := pgSetup(t)
	b := runRouter(t, store, router.Config{InboxConfig: middleware.InboxConfig{EventID: middleware.FirstEventID(
		middleware.EventIDFromMetadata(ackgap.MetadataEventIDKey), middleware.EventIDFromJSONField("event_id"))}})
	r42 := func() *message.Message {
		return message.NewMessage(watermill.NewUUID(), []byte(`{"event_id":"R42","account":"A1","amount":1}`))
	}
	r43 := message.NewMessage(watermill.NewUUID(), []byte(`{"event_id":"R43","account":"A1","amount":10}`))
	b.pub(t, r42())
	b.pub(t, r42()) // crash replay: same record, new Watermill UUID
	b.pub(t, r43)
	b.pub(t, message.NewMessage(watermill.NewUUID(), []byte(`{"account":"A1","amount":1000}`)))
	dl := b.deadLetter(t)
	require.Equal(t, ackgap.ReasonMissingEventID, dl.Metadata.Get(ackgap.MetadataDeadLetterReason))
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate, ackgap.OutcomeApplied, ackgap.OutcomeRejected}, b.wait(t, 4))
	require.Equal(t, 11, balance())
}

// TestS18PoisonDoesNotBlock: m1 valid, m2 not JSON, m3 valid, m4 a
// permanent business error. m2 and m4 go to the dead-letter topic with
// their reasons and original bytes, E1 and E3 apply, and each poison
// message is tried once (permanent errors are not retried).
func TestS18PoisonDoesNotBlock(t *testing.T) {
	store, balance := pgSetup(t)
	attempts := map[string]int{}
	var mu sync.Mutex
	h := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		mu.Lock()
		attempts[id]++
		mu.Unlock()
		if id == "E4" {
			return ackgap.Permanent("account_closed", nil)
		}
		return depositHandler(ctx, tx, msg)
	}
	b := runRouterWith(t, store, router.Config{}, h)
	b.pub(t, depositMsg("E1", 1))
	m2 := message.NewMessage(watermill.NewUUID(), []byte("\x00not json"))
	m2.Metadata.Set(ackgap.MetadataEventIDKey, "E2")
	b.pub(t, m2)
	b.pub(t, depositMsg("E3", 10))
	b.pub(t, depositMsg("E4", 100))
	reasons := map[string]string{}
	for range 2 {
		dl := b.deadLetter(t)
		reasons[dl.Metadata.Get(ackgap.MetadataEventIDKey)] = dl.Metadata.Get(ackgap.MetadataDeadLetterReason)
		if dl.Metadata.Get(ackgap.MetadataEventIDKey) == "E2" {
			require.Equal(t, "\x00not json", string(dl.Payload))
		}
	}
	require.Equal(t, map[string]string{"E2": ackgap.ReasonBadPayload, "E4": "account_closed"}, reasons)
	b.wait(t, 4)
	require.Equal(t, 11, balance())
	require.Equal(t, map[string]int{"E1": 1, "E2": 1, "E3": 1, "E4": 1}, attempts)
}

// TestS03CancellationIsNotPoison: shutdown cancels the message context
// while the handler's database call runs. The full router chain rolls the
// transaction back, does not retry, does not dead-letter, and returns the
// cancellation so Watermill nacks the message; a redelivery then applies it
// once.
func TestS03CancellationIsNotPoison(t *testing.T) {
	store, balance := pgSetup(t)
	dead := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	defer dead.Close()
	dlq, err := dead.Subscribe(context.Background(), router.DeadLetterTopicDefault)
	require.NoError(t, err)
	var outcomes []ackgap.Outcome
	r, err := router.New[pgx.Tx](store, &router.Config{DeadLetter: dead,
		InboxConfig: middleware.InboxConfig{Observer: func(_ context.Context, rep *ackgap.InboxReport) { outcomes = append(outcomes, rep.Outcome) }}})
	require.NoError(t, err)
	chain, err := r.Middleware("c1")
	require.NoError(t, err)
	shutdown := true
	h := router.Adapt(func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance + 1 WHERE id = 'A1'`); err != nil {
			return err
		}
		if shutdown {
			shutdown = false
			_, err := tx.Exec(ctx, `SELECT pg_sleep(30)`) // cancelled below
			return err
		}
		return nil
	})
	for i := len(chain) - 1; i >= 0; i-- {
		h = chain[i](h)
	}

	msg := depositMsg("E1", 1)
	ctx, cancel := context.WithCancel(context.Background())
	msg.SetContext(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = h(msg)
	require.ErrorIs(t, err, context.Canceled, "returned to Watermill, which nacks")
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed}, outcomes, "not retried")
	require.Equal(t, 0, balance())
	select {
	case m := <-dlq:
		t.Fatalf("a cancelled handler was dead-lettered: %v", m.Metadata)
	default:
	}

	redelivered := depositMsg("E1", 1)
	_, err = h(redelivered)
	require.NoError(t, err)
	require.Equal(t, 1, balance())
}

type routerBundle struct {
	*observed
	pubsub *gochannel.GoChannel // events, in order: Publish returns once the handler acked or nacked
	dead   *gochannel.GoChannel // the dead-letter topic
}

func runRouter(t *testing.T, store *pgxstore.Store, cfg router.Config) *routerBundle {
	return runRouterWith(t, store, cfg, depositHandler)
}

func runRouterWith(t *testing.T, store *pgxstore.Store, cfg router.Config, h router.HandlerFunc[pgx.Tx]) *routerBundle {
	t.Helper()
	b := &routerBundle{observed: newObserved()}
	b.pubsub = gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, watermill.NopLogger{})
	b.dead = gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	dlq, err := b.dead.Subscribe(context.Background(), router.DeadLetterTopicDefault)
	require.NoError(t, err)
	b.dlq = dlq
	cfg.DeadLetter = b.dead
	cfg.Observer = b.observe
	cfg.RetryInitialInterval, cfg.RetryMaxInterval = time.Millisecond, 5*time.Millisecond
	r, err := router.New[pgx.Tx](store, &cfg)
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("c1", "events", b.pubsub, h))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-r.Running()
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		require.NoError(t, <-done)
		require.NoError(t, b.pubsub.Close())
		require.NoError(t, b.dead.Close())
	})
	return b
}

func (b *routerBundle) pub(t *testing.T, msg *message.Message) {
	t.Helper()
	require.NoError(t, b.pubsub.Publish("events", msg))
}
