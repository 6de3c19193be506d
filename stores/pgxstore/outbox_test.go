package pgxstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// TestListenOutbox: the listener is told once it listens, then after a
// commit that added outbox rows, not for a rolled-back one, and not for
// another schema's outbox; it ends with nil when its context ends.
func TestListenOutbox(t *testing.T) {
	ctx := context.Background()
	store, _ := migrated(t, nil)
	other, _ := migrated(t, nil) // another schema, same table names

	notified := make(chan struct{}, 16)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- store.ListenOutbox(lctx, &stores.OutboxListenParams{Notify: func() { notified <- struct{}{} }})
	}()
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification once listening began")
	}

	insert := func(s *pgxstore.Store, key string, commit bool) {
		res, err := s.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: key})
		require.NoError(t, err)
		err = s.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: key})
		require.NoError(t, err)
		err = s.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: key + "-2"})
		require.NoError(t, err)
		if commit {
			require.NoError(t, s.CommitTx(ctx, res.Tx))
		} else {
			require.NoError(t, s.RollbackTx(ctx, res.Tx))
		}
	}
	insert(store, "rolled-back", false)
	insert(other, "other-schema", true)
	insert(store, "committed", true)
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification after a commit that added rows")
	}
	// The committed transaction's two inserts fold into one notification;
	// the rollback and the other schema sent none. Anything sent arrives
	// in order before a later notification, so a marker commit bounds it.
	insert(store, "marker", true)
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification for the marker")
	}
	require.Empty(t, notified, "one notification per committed transaction, none for rollbacks or other schemas")

	cancel()
	require.NoError(t, <-done)
	require.ErrorContains(t, store.ListenOutbox(ctx, &stores.OutboxListenParams{}), "Notify is nil")
}

// TestOutboxMigrationsInSchema: migration 002 goes up and down in a schema
// that is not on the search_path (qualified trigger function, index drops).
func TestOutboxMigrationsInSchema(t *testing.T) {
	ctx := context.Background()
	pool, testSchema := testdb.Schema(t, 0)
	schema := testSchema + `_Outbox "Q"`
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	})
	store, err := pgxstore.New(pool, &pgxstore.Config{Schema: schema, TablePrefix: "Relay-"})
	require.NoError(t, err)
	up, err := store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3, 4, 5}, up.Applied)

	notified := make(chan struct{}, 4)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- store.ListenOutbox(lctx, &stores.OutboxListenParams{Notify: func() { notified <- struct{}{} }})
	}()
	<-notified
	res, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
	require.NoError(t, err)
	err = store.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "k1"})
	require.NoError(t, err)
	require.NoError(t, store.CommitTx(ctx, res.Tx))
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification after the commit of an outbox row")
	}
	// A queued row through a deferred transaction wakes relays too.
	begun, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e2"})
	require.NoError(t, err)
	tx := begun.Tx
	require.NoError(t, store.QueueOutboxTx(ctx, tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "k2"}))
	require.NoError(t, store.CommitTx(ctx, tx))
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification after the commit of a queued outbox row")
	}
	// Rows written in a transaction of the caller's own: NotifyOutbox.
	own, err := pool.Begin(ctx)
	require.NoError(t, err)
	err = store.QueueOutboxTx(ctx, own, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "k3"})
	require.NoError(t, err)
	require.NoError(t, own.Commit(ctx))
	require.NoError(t, store.NotifyOutbox(ctx))
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification from NotifyOutbox")
	}
	cancel()
	require.NoError(t, <-done)

	claimed, err := store.ClaimOutbox(ctx, &stores.OutboxClaimParams{Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed.Rows, 3)

	down, err := store.Migrate(ctx, &stores.MigrateParams{Down: true, TargetVersion: 1})
	require.NoError(t, err)
	require.Equal(t, []int{5, 4, 3, 2}, down.Applied)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
}

// migrated returns a store on a fresh schema, migrated to the newest
// version, and its pool.
func migrated(t testing.TB, cfg *pgxstore.Config) (*pgxstore.Store, *pgxpool.Pool) {
	t.Helper()
	pool, _ := testdb.Schema(t, 32)
	store, err := pgxstore.New(pool, cfg)
	require.NoError(t, err)
	_, err = store.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	return store, pool
}
