package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
)

// openTestMariaDB opens the MariaDB backend on the test server
// (TEST_MYSQL_DSN or the local one) with one pending order per event of p,
// and drops its database when t ends.
func openTestMariaDB(t *testing.T, p *plan) *mariadb {
	t.Helper()
	ctx := context.Background()
	m, err := openMariaDB(ctx, testdb.MySQLDSN(), 4)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.close()) })
	require.NoError(t, m.reset(ctx, p.orderIDs()))
	return m
}

func eventMessage(ev *event) *message.Message {
	msg := message.NewMessage("m-"+ev.eventID, ev.payload)
	msg.Metadata.Set(eventIDKey, ev.eventID)
	return msg
}

// TestMariaDBHandWrittenDuplicate: the hand-written MariaDB consumer
// applies an event once however many copies arrive (1062 on the inbox row
// is a duplicate, acked); a second event for an order already moved keeps
// its inbox row and records no effects; an outbox key that exists with
// another payload is an idempotency conflict and rolls the transaction
// back, inbox row included.
func TestMariaDBHandWrittenDuplicate(t *testing.T) {
	p := newPlan(3, 0, 1)
	m := openTestMariaDB(t, p)
	ctx := context.Background()
	ev := &p.events[0]
	for range 3 {
		require.NoError(t, m.handWritten(eventMessage(ev)))
	}
	c, err := m.counts(ctx)
	require.NoError(t, err)
	require.Equal(t, counts{transitions: 1, charges: 1, receipts: 1, inbox: 1}, c)

	// Another event id for the same order: applied already, no effects.
	other := *ev
	other.eventID = "order.placed:again"
	require.NoError(t, m.handWritten(eventMessage(&other)))
	c, err = m.counts(ctx)
	require.NoError(t, err)
	require.Equal(t, counts{transitions: 1, charges: 1, receipts: 1, inbox: 2}, c)

	// The charge key of event 1 taken by another payload: a conflict.
	var body orderPlaced
	ev1 := &p.events[1]
	require.NoError(t, decodeInto(ev1.payload, &body))
	chargeKey, _, _, _, err := effects(&body)
	require.NoError(t, err)
	_, err = m.db.ExecContext(ctx, myOutboxInsert, kindCharge, chargeKey, []byte("other"), payloadHash([]byte("other")), "{}", consumer, "x", "", 0, 0)
	require.NoError(t, err)
	err = m.handWritten(eventMessage(ev1))
	require.ErrorIs(t, err, ackgap.ErrIdempotencyConflict)
	c, err = m.counts(ctx)
	require.NoError(t, err)
	require.Equal(t, counts{transitions: 1, charges: 2, receipts: 1, inbox: 2}, c, "the conflicting event's transaction rolled back")
}

// TestMariaDBCeilingDuplicate: the ceiling's one-round-trip transaction
// writes nothing for a copy (INSERT IGNORE of the inbox row, the guard,
// ON DUPLICATE KEY of the outbox rows), and a payload conflict on an
// outbox key fails and leaves the connection with no open transaction.
func TestMariaDBCeilingDuplicate(t *testing.T) {
	p := newPlan(2, 0, 1)
	m := openTestMariaDB(t, p)
	ctx := context.Background()
	for range 2 {
		require.NoError(t, m.ceiling(ctx, &p.events[0]))
	}
	c, err := m.counts(ctx)
	require.NoError(t, err)
	require.Equal(t, counts{transitions: 1, charges: 1, receipts: 1, inbox: 1}, c)

	var body orderPlaced
	require.NoError(t, decodeInto(p.events[1].payload, &body))
	_, _, receiptKey, _, err := effects(&body)
	require.NoError(t, err)
	_, err = m.db.ExecContext(ctx, myOutboxInsert, kindReceipt, receiptKey, []byte("other"), payloadHash([]byte("other")), "{}", consumer, "x", "", 0, 0)
	require.NoError(t, err)
	require.Error(t, m.ceiling(ctx, &p.events[1]))
	c, err = m.counts(ctx)
	require.NoError(t, err)
	require.Equal(t, counts{transitions: 1, charges: 1, receipts: 2, inbox: 1}, c, "the conflicting event's transaction rolled back")
	var open int
	require.NoError(t, m.multi.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.INNODB_TRX`+
		` WHERE trx_mysql_thread_id IN (SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ?)`, m.dbName).Scan(&open))
	require.Zero(t, open, "no transaction left open on a pooled connection")
}

// TestMariaDBChargeOrders: the batched workload's set-based transition
// moves exactly the pending orders of the batch and says which.
func TestMariaDBChargeOrders(t *testing.T) {
	p := newPlan(4, 0, 1)
	m := openTestMariaDB(t, p)
	ctx := context.Background()
	_, err := m.db.ExecContext(ctx, myTransition, statusCharging, "o1", statusPending)
	require.NoError(t, err)
	tx, err := m.db.BeginTx(ctx, myReadCommitted)
	require.NoError(t, err)
	moved, err := myChargeOrders(ctx, tx, []string{"o0", "o1", "o2", "missing"})
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.ElementsMatch(t, []string{"o0", "o2"}, moved)
	c, err := m.counts(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, c.transitions)
}

// TestHarnessMariaDB runs the MariaDB cells once, briefly, with
// duplicates: every run is correct (state changes and effects equal the
// unique events), and the targets table has MariaDB's rows. It asserts
// nothing about speed.
func TestHarnessMariaDB(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"-stores", "mariadb", "-mariadb-dsn", testdb.MySQLDSN(), "-workloads", "safe,hand-written,ceiling,unsafe,safe-batched",
		"-concurrency", "1,3", "-dup-rates", "0,0.5", "-dup-concurrency", "3",
		"-duration", "100ms", "-messages", "300", "-runs", "1", "-out", "", "-brokers", "", "-overhead=false",
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	out := stdout.String()
	for _, k := range []string{"safe", "hand-written", "ceiling", "unsafe", "safe-batched"} {
		require.Regexp(t, `\| mariadb \| 3 \| `+k+` \| .*\| yes \|`, out)
		require.Regexp(t, `\| mariadb \| `+k+` \| 50 % \| .*\| yes \|`, out)
	}
	for _, want := range []string{"| safe / hand-written ≥ 1.5, mariadb, concurrency 3 |", "| safe-batched / unsafe ≥ 2 (batches of 100, one transaction each), mariadb, concurrency 1 |",
		"innodb_flush_log_at_trx_commit", "## The MariaDB cells"} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "**no**: ", "every run was correct")
}

// TestKafkaModesMariaDB runs the Kafka ordering modes comparison on
// MariaDB once, briefly: every mode's run is correct, and its section goes
// between its own markers, leaving PostgreSQL's alone. It needs kfake
// (tools/brokers.sh start) and asserts nothing about speed.
func TestKafkaModesMariaDB(t *testing.T) {
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	old := "# results\n\n" + kmBegin + "\npostgres kept\n" + kmEnd + "\n\n" + kmMariaBegin + "\nstale\n" + kmMariaEnd + "\n"
	require.NoError(t, os.WriteFile(out, []byte(old), 0o644))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"-kafka-modes", "-kafka-modes-store", "mariadb", "-mariadb-dsn", testdb.MySQLDSN(), "-kafka-modes-events", "200",
		"-kafka-modes-runs", "1", "-kafka-modes-delays", "0", "-kafka-modes-hot=false", "-out", out,
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	written, err := os.ReadFile(out)
	require.NoError(t, err)
	doc := string(written)
	require.True(t, strings.HasPrefix(doc, "# results\n\n"+kmBegin+"\npostgres kept\n"+kmEnd+"\n\n"+kmMariaBegin), doc)
	require.NotContains(t, doc, "stale")
	for _, m := range kmModes {
		require.Contains(t, stdout.String(), "| "+m+" | at once | ")
	}
	require.Contains(t, stdout.String(), "MariaDB consumer")
	require.NotContains(t, stdout.String(), "| NO |")

	var stderr2 bytes.Buffer
	_, err = parse([]string{"-kafka-modes-store", "oracle"}, &stderr2)
	require.ErrorContains(t, err, `-kafka-modes-store: unknown store "oracle"`)
}

// A benchmark run keeps the MariaDB Kafka modes section beside
// PostgreSQL's.
func TestWriteKeepingMariaDBModes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	km := kmBegin + "\npostgres modes\n" + kmEnd
	kmm := kmMariaBegin + "\nmariadb modes\n" + kmMariaEnd
	require.NoError(t, os.WriteFile(out, []byte("# Old\n\nstale\n\n"+km+"\n\n"+kmm+"\n"), 0o644))
	require.NoError(t, writeKeepingSections(out, "# Results\n\ntable\n"))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "# Results\n\ntable\n\n"+km+"\n\n"+kmm+"\n", string(b))
}

// decodeInto unmarshals an order.placed payload.
func decodeInto(payload []byte, ev *orderPlaced) error {
	got, err := decode(message.NewMessage("x", payload))
	*ev = got
	return err
}

// TestMariaDBResetKeepsFiles: reset empties the inbox and outbox without
// shrinking their tablespace files, so that a run does not measure InnoDB
// extending a new file (TRUNCATE made every run start from a file of a
// few pages; see reset).
func TestMariaDBResetKeepsFiles(t *testing.T) {
	p := newPlan(1, 0, 1)
	m := openTestMariaDB(t, p)
	ctx := context.Background()
	const rows = 4000
	for lo := 0; lo < rows; lo += 500 {
		var q strings.Builder
		q.WriteString(`INSERT INTO "ackgap_inbox" (consumer, event_id, payload_hash, received_at) VALUES `)
		var args []any
		for i := lo; i < lo+500; i++ {
			if i > lo {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, consumer, "e"+strconv.Itoa(i), payloadHash([]byte(strconv.Itoa(i))), int64(i))
		}
		_, err := m.db.ExecContext(ctx, q.String(), args...)
		require.NoError(t, err)
	}
	before := mariaFileSize(t, m, "ackgap_inbox")
	require.NoError(t, m.reset(ctx, p.orderIDs()))
	c, err := m.counts(ctx)
	require.NoError(t, err)
	require.Zero(t, c.inbox, "reset empties the inbox")
	require.GreaterOrEqual(t, mariaFileSize(t, m, "ackgap_inbox"), before, "reset keeps the inbox's tablespace file")
}

// mariaFileSize returns the size in bytes of table's tablespace file.
func mariaFileSize(t *testing.T, m *mariadb, table string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, m.db.QueryRowContext(context.Background(),
		`SELECT FILE_SIZE FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = ?`, m.dbName+"/"+table).Scan(&n))
	return n
}

// TestKMMariaResetKeepsFiles: the Kafka modes comparison's reset on
// MariaDB empties the tables its runs write without shrinking their
// files, as mariadb.reset does.
func TestKMMariaResetKeepsFiles(t *testing.T) {
	ctx := context.Background()
	m, err := openKMMaria(ctx, testdb.MySQLDSN())
	require.NoError(t, err)
	t.Cleanup(m.close)
	db := m.store.DB()
	var q strings.Builder
	q.WriteString(`INSERT INTO hand_inbox (consumer, event_id) VALUES `)
	var args []any
	for i := range 4000 {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?)")
		args = append(args, "c", "event-with-a-longish-id-"+strconv.Itoa(i))
	}
	_, err = db.ExecContext(ctx, q.String(), args...)
	require.NoError(t, err)
	size := func() int64 {
		var n int64
		require.NoError(t, db.QueryRowContext(ctx, `SELECT FILE_SIZE FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = ?`,
			m.dbName+"/hand_inbox").Scan(&n))
		return n
	}
	before := size()
	require.NoError(t, m.reset(ctx))
	var rows int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM hand_inbox`).Scan(&rows))
	require.Zero(t, rows)
	require.GreaterOrEqual(t, size(), before, "reset keeps hand_inbox's tablespace file")
}
