package kafkabroker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// TestProgressReplaysWhatTheDatabaseLost (issue 24, items 1 and 2): every
// consumer transaction stores its partition's watermark; a database that
// lost its last commits (here a restore that took back the last 8 events'
// inbox rows, state changes and progress row, as a promoted standby does)
// is behind the group's committed offset, and the next assignment starts
// from the stored watermark: the lost events are applied again, once each,
// the kept ones are not applied twice, and the rewind is counted.
func TestProgressReplaysWhatTheDatabaseLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 8)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, createApplied)
	require.NoError(t, err)
	applied := func() map[string]int {
		rows, err := pool.Query(ctx, `SELECT event_id, n FROM applied`)
		require.NoError(t, err)
		return collect(t, rows.Next, rows.Scan, func() error { rows.Close(); return nil }, rows.Err)
	}

	topic, group := unique("orders"), unique("billing")
	const n, lost = 20, 8
	pub := newPublisher(t)
	for i := range n {
		require.NoError(t, pub.Publish(topic, event(t, fmt.Sprintf("ev-%02d", i), "one-partition")))
	}
	run := func() *kafkabroker.Subscriber {
		sub := newSubscriber(t, group, func(c *kafkabroker.SubscriberConfig) { c.Progress = store.ProgressReader("billing") })
		r, err := router.New[TTxPG](store, &router.Config{Logger: testLogger(), DeadLetter: pub, DeadLetterTopic: topic + ".dlq"})
		require.NoError(t, err)
		require.NoError(t, r.AddHandler("billing", topic, sub, func(ctx context.Context, tx TTxPG, msg *message.Message) error {
			_, err := tx.Exec(ctx, `INSERT INTO applied (event_id, n) VALUES ($1, 1)
ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, msg.Metadata.Get(ackgap.MetadataEventIDKey))
			return err
		}))
		rn := start(t, r)
		eventually(t, 60*time.Second, "every event applied", func() bool { return len(applied()) == n })
		require.NoError(t, rn.close())
		return sub
	}

	first := run()
	require.Zero(t, first.Rewinds().Partitions.Load(), "a fresh group and database agree")
	rows, err := store.Progress(ctx, "billing")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, int64(n), rows[0].Watermark, "the last transaction applied offset n-1")
	partition := rows[0].Partition

	// The restore: the last `lost` transactions are gone, progress row included.
	_, err = pool.Exec(ctx, `DELETE FROM applied WHERE event_id >= $1`, fmt.Sprintf("ev-%02d", n-lost))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM ackgap_inbox WHERE consumer = 'billing' AND event_id >= $1`, fmt.Sprintf("ev-%02d", n-lost))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE ackgap_progress SET watermark = $1`, n-lost)
	require.NoError(t, err)

	second := run()
	got := applied()
	for i := range n {
		require.Equal(t, 1, got[fmt.Sprintf("ev-%02d", i)], "ev-%02d applied exactly once", i)
	}
	require.Equal(t, int64(1), second.Rewinds().Partitions.Load())
	require.Equal(t, int64(lost), second.Rewinds().Records.Load())
	rows, err = store.Progress(ctx, "billing")
	require.NoError(t, err)
	require.Equal(t, []int64{int64(n)}, []int64{rows[0].Watermark})
	require.Equal(t, partition, rows[0].Partition)
}

// TestProgressReplaysARestoredSQLiteFile is the same on SQLite: a file
// restored from a backup taken before the last 5 commits.
func TestProgressReplaysARestoredSQLiteFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	db := store.DB()
	_, err = db.ExecContext(ctx, createApplied)
	require.NoError(t, err)
	applied := func() map[string]int {
		rows, err := db.QueryContext(ctx, `SELECT event_id, n FROM applied`)
		require.NoError(t, err)
		return collect(t, rows.Next, rows.Scan, rows.Close, rows.Err)
	}
	topic, group := unique("orders"), unique("billing")
	const n, lost = 12, 5
	pub := newPublisher(t)
	for i := range n {
		require.NoError(t, pub.Publish(topic, event(t, fmt.Sprintf("ev-%02d", i), "one-partition")))
	}
	run := func() *kafkabroker.Subscriber {
		sub := newSubscriber(t, group, func(c *kafkabroker.SubscriberConfig) { c.Progress = store.ProgressReader("billing") })
		r, err := router.New[TTxSQL](store, &router.Config{Logger: testLogger(), DeadLetter: pub, DeadLetterTopic: topic + ".dlq"})
		require.NoError(t, err)
		require.NoError(t, r.AddHandler("billing", topic, sub, func(ctx context.Context, tx TTxSQL, msg *message.Message) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO applied (event_id, n) VALUES (?, 1)
ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, msg.Metadata.Get(ackgap.MetadataEventIDKey))
			return err
		}))
		rn := start(t, r)
		eventually(t, 60*time.Second, "every event applied", func() bool { return len(applied()) == n })
		require.NoError(t, rn.close())
		return sub
	}
	require.Zero(t, run().Rewinds().Partitions.Load())
	rows, err := store.Progress(ctx, "billing")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, int64(n), rows[0].Watermark)

	cut := fmt.Sprintf("ev-%02d", n-lost)
	for _, q := range []string{`DELETE FROM applied WHERE event_id >= ?`, `DELETE FROM ackgap_inbox WHERE event_id >= ?`} {
		_, err = db.ExecContext(ctx, q, cut)
		require.NoError(t, err)
	}
	_, err = db.ExecContext(ctx, `UPDATE ackgap_progress SET watermark = ?`, n-lost)
	require.NoError(t, err)

	second := run()
	got := applied()
	for i := range n {
		require.Equal(t, 1, got[fmt.Sprintf("ev-%02d", i)], "ev-%02d applied exactly once", i)
	}
	require.Equal(t, int64(1), second.Rewinds().Partitions.Load())
	require.Equal(t, int64(lost), second.Rewinds().Records.Load())
}
