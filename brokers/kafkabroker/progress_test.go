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

// progressCase is a store with progress rows and a way to take back its
// last commits, as a restore does.
type progressCase[TTx any] struct {
	be     backend[TTx]
	reader kafkabroker.ProgressReader
	rows   func(ctx context.Context, consumer string) ([]stores.ProgressRow, error)
	// restore deletes the inbox and applied rows of event ids >= cut and
	// sets the stored watermark to w.
	restore func(t testing.TB, cut string, w int64)
}

// TestProgressReplaysWhatTheDatabaseLost (issue 24, items 1, 2 and 4):
// every consumer transaction stores its partition's watermark; a database
// that lost its last commits (a restore that took back the last events'
// inbox rows, state changes and progress row, as a promoted standby does)
// is behind the group's committed offset, and the next assignment starts
// from the stored watermark: the lost events are applied again, once each,
// the kept ones are not applied twice, and the rewind is counted.
func TestProgressReplaysWhatTheDatabaseLost(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pool, _ := testdb.Schema(t, 8)
		store, err := pgxstore.New(pool, nil)
		require.NoError(t, err)
		be := pgBackendOn(t, pool, store)
		testProgressReplay(t, progressCase[TTxPG]{be: be, reader: store.ProgressReader("billing"), rows: store.Progress,
			restore: func(t testing.TB, cut string, w int64) {
				for _, q := range []string{`DELETE FROM applied WHERE event_id >= $1`, `DELETE FROM ackgap_inbox WHERE event_id >= $1`} {
					_, err := pool.Exec(context.Background(), q, cut)
					require.NoError(t, err)
				}
				_, err := pool.Exec(context.Background(), `UPDATE ackgap_progress SET watermark = $1`, w)
				require.NoError(t, err)
			}})
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		be := sqliteBackend(t)
		store := be.store.(*sqlitestore.Store)
		testProgressReplay(t, progressCase[TTxSQL]{be: be, reader: store.ProgressReader("billing"), rows: store.Progress,
			restore: func(t testing.TB, cut string, w int64) {
				for _, q := range []string{`DELETE FROM applied WHERE event_id >= ?`, `DELETE FROM ackgap_inbox WHERE event_id >= ?`} {
					_, err := store.DB().ExecContext(context.Background(), q, cut)
					require.NoError(t, err)
				}
				_, err := store.DB().ExecContext(context.Background(), `UPDATE ackgap_progress SET watermark = ?`, w)
				require.NoError(t, err)
			}})
	})
}

func testProgressReplay[TTx any](t *testing.T, c progressCase[TTx]) {
	ctx := context.Background()
	topic, group := unique("orders"), unique("billing")
	const n, lost = 16, 6
	pub := newPublisher(t)
	for i := range n {
		require.NoError(t, pub.Publish(topic, event(t, fmt.Sprintf("ev-%02d", i), "one-partition")))
	}
	run := func() *kafkabroker.Subscriber {
		sub := newSubscriber(t, group, func(cfg *kafkabroker.SubscriberConfig) { cfg.Progress = c.reader })
		r, err := router.New(c.be.store, &router.Config{Logger: testLogger(), DeadLetter: pub, DeadLetterTopic: topic + ".dlq"})
		require.NoError(t, err)
		require.NoError(t, r.AddHandler("billing", topic, sub, func(ctx context.Context, tx TTx, msg *message.Message) error {
			return c.be.apply(ctx, tx, msg.Metadata.Get(ackgap.MetadataEventIDKey))
		}))
		rn := start(t, r)
		eventually(t, 60*time.Second, "every event applied", func() bool { return len(c.be.applied(t)) == n })
		require.NoError(t, rn.close())
		return sub
	}

	require.Zero(t, run().Rewinds().Partitions.Load(), "a fresh group and database agree")
	rows, err := c.rows(ctx, "billing")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, int64(n), rows[0].Watermark, "the last transaction applied offset n-1")

	c.restore(t, fmt.Sprintf("ev-%02d", n-lost), n-lost)
	second := run()
	got := c.be.applied(t)
	for i := range n {
		require.Equal(t, 1, got[fmt.Sprintf("ev-%02d", i)], "ev-%02d applied exactly once", i)
	}
	require.Equal(t, int64(1), second.Rewinds().Partitions.Load())
	require.Equal(t, int64(lost), second.Rewinds().Records.Load())
	rows, err = c.rows(ctx, "billing")
	require.NoError(t, err)
	require.Equal(t, int64(n), rows[0].Watermark)
}
