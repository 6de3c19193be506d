package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
)

// accounts creates the handler's table with one account at balance 0 and
// returns a reader of its balance.
func accounts(t *testing.T, store *mysqlstore.Store) func() int {
	ctx := context.Background()
	_, err := store.DB().ExecContext(ctx, `CREATE TABLE accounts (id VARCHAR(32) PRIMARY KEY, balance INT NOT NULL)`)
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, `INSERT INTO accounts VALUES ('A1', 0)`)
	require.NoError(t, err)
	return func() int {
		var b int
		require.NoError(t, store.DB().QueryRowContext(ctx, `SELECT balance FROM accounts WHERE id = 'A1'`).Scan(&b))
		return b
	}
}

// deposit adds 100 to A1 (not idempotent by itself) and writes an outbox
// row; before returning it calls hook, which may hold it or fail it.
func deposit(hook func(ctx context.Context) error) router.HandlerFunc[*sql.Tx] {
	return func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance + 100 WHERE id = 'A1'`); err != nil {
			return err
		}
		id, _ := ackgap.EventIDFromContext(ctx)
		if err := ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "notify", IdempotencyKey: "deposit:" + id, Payload: msg.Payload}); err != nil {
			return err
		}
		return hook(ctx)
	}
}

type outcomes struct {
	mu  sync.Mutex
	all []ackgap.Outcome
}

func (o *outcomes) observe(_ context.Context, r *ackgap.InboxReport) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.all = append(o.all, r.Outcome)
}

func (o *outcomes) count(want ackgap.Outcome) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, x := range o.all {
		if x == want {
			n++
		}
	}
	return n
}

func chain(t *testing.T, store *mysqlstore.Store, o *outcomes, h router.HandlerFunc[*sql.Tx]) message.HandlerFunc {
	inbox, err := middleware.Inbox[*sql.Tx](store, &middleware.InboxConfig{Consumer: "c1", Observer: o.observe})
	require.NoError(t, err)
	return inbox(router.Adapt(h))
}

func copyOf(eventID string) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(`{"amount":100}`))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
	return msg
}

// Eight concurrent deliveries of one event, released together by a
// barrier, apply once on MariaDB: one applied, seven duplicates, one
// outbox row, every copy acked.
func TestCasesConcurrentDeliveriesApplyOnce(t *testing.T) {
	store := setup(t)
	balance := accounts(t, store)
	o := &outcomes{}
	h := chain(t, store, o, deposit(func(context.Context) error { time.Sleep(20 * time.Millisecond); return nil }))
	const n = 8
	start := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		go func() {
			<-start
			_, err := h(copyOf("E1"))
			errs <- err
		}()
	}
	close(start)
	for range n {
		require.NoError(t, <-errs, "every copy is acked")
	}
	require.Equal(t, 100, balance())
	require.Equal(t, 1, o.count(ackgap.OutcomeApplied))
	require.Equal(t, n-1, o.count(ackgap.OutcomeDuplicate))
	rows, err := store.ListOutbox(context.Background(), &stores.OutboxListParams{})
	require.NoError(t, err)
	require.Len(t, rows.Rows, 1)
}

// A redelivery racing a handler that fails: the failing copy holds the
// inbox row until the racing copy waits on it, then fails and rolls back;
// the racing copy applies. Redelivered until acked, the event applies once,
// and no error on the way is permanent (a deadlock or lock wait would be
// store-unavailable: redelivered, never dead-lettered).
func TestCasesRedeliveryRacingFailedHandler(t *testing.T) {
	store := setup(t)
	balance := accounts(t, store)
	o := &outcomes{}
	failing := errors.New("payment service down")
	var once sync.Once
	held := make(chan struct{})
	release := make(chan struct{})
	h := chain(t, store, o, deposit(func(context.Context) error {
		first := false
		once.Do(func() { first = true })
		if !first {
			return nil
		}
		close(held)
		<-release
		return failing
	}))
	deliver := func(results chan<- error) {
		for attempt := 0; ; attempt++ {
			_, err := h(copyOf("E1"))
			if err == nil || attempt == 20 {
				results <- err
				return
			}
			if ackgap.IsPermanent(err) {
				results <- fmt.Errorf("permanent (would be dead-lettered): %w", err)
				return
			}
		}
	}
	results := make(chan error, 2)
	go deliver(results)
	<-held
	go deliver(results)
	time.Sleep(100 * time.Millisecond) // let the racing copy reach the inbox row's lock
	close(release)
	require.NoError(t, <-results)
	require.NoError(t, <-results)
	require.Equal(t, 100, balance(), "applied once")
	require.Equal(t, 1, o.count(ackgap.OutcomeApplied))
	rows, err := store.ListOutbox(context.Background(), &stores.OutboxListParams{})
	require.NoError(t, err)
	require.Len(t, rows.Rows, 1)
}

// A zombie relay (its lease lapsed, another relay claimed the row since)
// changes nothing: its mark-done, retry and mark-dead are no-ops, and the
// new claim's mark-done applies.
func TestCasesZombieRelayIsNoOp(t *testing.T) {
	store := setup(t)
	ctx := context.Background()
	tx, err := store.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	err = store.QueueOutboxTx(ctx, tx, &ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "z1", Payload: []byte("x")})
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	t0 := time.Now()
	zombie, err := store.ClaimOutbox(ctx, &stores.OutboxClaimParams{Now: t0, Lease: time.Second, Limit: 10})
	require.NoError(t, err)
	require.Len(t, zombie.Rows, 1)
	winner, err := store.ClaimOutbox(ctx, &stores.OutboxClaimParams{Now: t0.Add(2 * time.Second), Lease: time.Second, Limit: 10})
	require.NoError(t, err)
	require.Len(t, winner.Rows, 1, "the lapsed lease is claimed again")
	z := zombie.Rows[0].Claim
	for _, st := range []stores.OutboxState{stores.OutboxDone, stores.OutboxPending, stores.OutboxDead} {
		res, err := store.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
			{ID: z.ID, ClaimToken: z.Token, State: st, LastError: "late"}}})
		require.NoError(t, err)
		require.Equal(t, []bool{false}, res.Changed, "the zombie's %s", st)
	}
	w := winner.Rows[0].Claim
	res, err := store.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{{ID: w.ID, ClaimToken: w.Token, State: stores.OutboxDone}}})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, res.Changed)
	rows, err := store.ListOutbox(ctx, &stores.OutboxListParams{})
	require.NoError(t, err)
	require.Equal(t, stores.OutboxDone, rows.Rows[0].State)
	require.Equal(t, "", rows.Rows[0].LastError, "the zombie's retry left no trace")
}
