package kafkabroker_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
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

// TestProgressReplaysWhatTheDatabaseLost (issue 24, items 1, 2 and 4; on
// PostgreSQL, MariaDB and SQLite):
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
	t.Run("mariadb", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		store, err := mysqlstore.Open(ctx, testdb.MySQLDatabase(t), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		_, err = store.Migrate(ctx, &stores.MigrateParams{})
		require.NoError(t, err)
		db := store.DB()
		_, err = db.ExecContext(ctx, `CREATE TABLE applied (event_id VARCHAR(255) PRIMARY KEY, n INTEGER NOT NULL)`)
		require.NoError(t, err)
		be := backend[TTxSQL]{
			store: store,
			apply: func(ctx context.Context, tx *sql.Tx, id string) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO applied (event_id, n) VALUES (?, 1) ON DUPLICATE KEY UPDATE n = n + 1`, id)
				return err
			},
			applied: func(t testing.TB) map[string]int {
				rows, err := db.QueryContext(context.Background(), `SELECT event_id, n FROM applied`)
				require.NoError(t, err)
				return collect(t, rows.Next, rows.Scan, rows.Close, rows.Err)
			},
		}
		testProgressReplay(t, progressCase[TTxSQL]{be: be, reader: store.ProgressReader("billing"), rows: store.Progress,
			restore: func(t testing.TB, cut string, w int64) {
				for _, q := range []string{`DELETE FROM applied WHERE event_id >= ?`, `DELETE FROM ackgap_inbox WHERE event_id >= ?`} {
					_, err := db.ExecContext(context.Background(), q, cut)
					require.NoError(t, err)
				}
				_, err := db.ExecContext(context.Background(), `UPDATE ackgap_progress SET watermark = ?`, w)
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

// warnLog records what a subscriber logs at warn: message and fields.
type warnLog struct {
	watermill.NopLogger
	mu    sync.Mutex
	warns []loggedWarn
}

type loggedWarn struct {
	msg    string
	fields watermill.LogFields
}

func (l *warnLog) Warn(msg string, fields watermill.LogFields) {
	l.mu.Lock()
	l.warns = append(l.warns, loggedWarn{msg, fields})
	l.mu.Unlock()
}

func (l *warnLog) With(watermill.LogFields) watermill.LoggerAdapter { return l }

// of returns the fields of every warning logged with msg, in order.
func (l *warnLog) of(msg string) []watermill.LogFields {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []watermill.LogFields
	for _, w := range l.warns {
		if w.msg == msg {
			out = append(out, w.fields)
		}
	}
	return out
}

// TestProgressCoversAGroupDeletedOrResetByHand (issue 24): the stored
// watermark also covers an operator's hand on the group. Reset to the
// latest offset (kafka-consumer-groups --reset-offsets --to-latest: an
// OffsetCommit of the empty group) past records never applied: the
// database is behind the committed offset, the records are replayed and
// the rewind logged (LogDatabaseBehind) and counted. Deleted (DeleteGroups)
// after the pruner dropped the inbox rows: the group has no committed
// offset, and the partition starts from the stored watermark
// (LogGroupOffsetMissing, Rewinds.Missing) rather than from the oldest
// offset, which would apply every record again.
func TestProgressCoversAGroupDeletedOrResetByHand(t *testing.T) {
	t.Run("subscriber", func(t *testing.T) {
		t.Parallel()
		testGroupByHand(t, func(cfg kafkabroker.SubscriberConfig, log *warnLog) (rewindingSubscriber, error) {
			return kafkabroker.NewSubscriber(&cfg, log)
		})
	})
	t.Run("key-parallel", func(t *testing.T) {
		t.Parallel()
		testGroupByHand(t, func(cfg kafkabroker.SubscriberConfig, log *warnLog) (rewindingSubscriber, error) {
			return kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: cfg}, log)
		})
	})
}

// rewindingSubscriber is a Subscriber or a ParallelSubscriber.
type rewindingSubscriber interface {
	message.Subscriber
	Rewinds() *kafkabroker.Rewinds
}

func testGroupByHand(t *testing.T, newSub func(kafkabroker.SubscriberConfig, *warnLog) (rewindingSubscriber, error)) {
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 8)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	be := pgBackendOn(t, pool, store)
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)
	next := 0
	publish := func(k int) {
		for range k {
			require.NoError(t, pub.Publish(topic, event(t, fmt.Sprintf("ev-%02d", next), "one-partition")))
			next++
		}
	}
	run := func(log *warnLog) rewindingSubscriber {
		sub, err := newSub(kafkabroker.SubscriberConfig{
			Brokers: kafkaBrokers(t), ConsumerGroup: group, Progress: store.ProgressReader("billing"),
			HoldTimeout: 20 * time.Second, SessionTimeout: 2 * time.Second, CloseTimeout: 10 * time.Second,
		}, log)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Close() })
		r, err := router.New[TTxPG](be.store, &router.Config{Logger: testLogger(), DeadLetter: pub, DeadLetterTopic: topic + ".dlq"})
		require.NoError(t, err)
		require.NoError(t, r.AddHandler("billing", topic, sub, func(ctx context.Context, tx TTxPG, msg *message.Message) error {
			return be.apply(ctx, tx, msg.Metadata.Get(ackgap.MetadataEventIDKey))
		}))
		rn := start(t, r)
		eventually(t, 60*time.Second, "every event applied", func() bool { return len(be.applied(t)) == next })
		eventually(t, 60*time.Second, "the end committed", func() bool { return committedOffset(t, group, topic, 0) == int64(next) })
		require.NoError(t, rn.close())
		return sub
	}
	once := func() {
		t.Helper()
		got := be.applied(t)
		require.Len(t, got, next)
		for id, n := range got {
			require.Equal(t, 1, n, "%s applied exactly once", id)
		}
	}
	const n, m = 10, 5
	publish(n)
	run(&warnLog{})

	// Reset to latest by hand, past m records nobody applied.
	publish(m)
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	client, err := sarama.NewClient(kafkaBrokers(t), sc)
	require.NoError(t, err)
	defer client.Close()
	om, err := sarama.NewOffsetManagerFromClient(group, client)
	require.NoError(t, err)
	pom, err := om.ManagePartition(topic, 0)
	require.NoError(t, err)
	pom.MarkOffset(n+m, "")
	om.Commit()
	require.NoError(t, pom.Close())
	require.NoError(t, om.Close())
	require.Equal(t, int64(n+m), committedOffset(t, group, topic, 0))
	log := &warnLog{}
	sub := run(log)
	once()
	require.Equal(t, int64(1), sub.Rewinds().Partitions.Load())
	require.Equal(t, int64(m), sub.Rewinds().Records.Load())
	behind := log.of(kafkabroker.LogDatabaseBehind)
	require.Len(t, behind, 1)
	require.EqualValues(t, n+m, behind[0]["committed_offset"])
	require.EqualValues(t, n, behind[0]["stored_watermark"])

	// The pruner dropped the inbox rows, then the group is deleted by hand.
	_, err = pool.Exec(ctx, `DELETE FROM ackgap_inbox`)
	require.NoError(t, err)
	admin := newAdmin(t)
	defer admin.Close()
	require.NoError(t, admin.DeleteConsumerGroup(group))
	publish(1)
	log = &warnLog{}
	sub = run(log)
	once()
	require.Equal(t, int64(1), sub.Rewinds().Missing.Load())
	require.Zero(t, sub.Rewinds().Partitions.Load())
	missing := log.of(kafkabroker.LogGroupOffsetMissing)
	require.Len(t, missing, 1)
	require.EqualValues(t, n+m, missing[0]["stored_watermark"])
}
