package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// classOf names what ackgap does with err: "unavailable" (redelivered,
// never dead-lettered), "invalid" (permanent, invalid_data) or "other".
func classOf(err error) string {
	switch {
	case errors.Is(err, ackgap.ErrStoreUnavailable):
		return "unavailable"
	case errors.Is(err, ackgap.ErrInvalidData) && ackgap.ReasonOf(err) == ackgap.ReasonInvalidData:
		return "invalid"
	}
	return "other"
}

// TestClassifyError: real SQLite errors get the class docs/errors.md gives
// them: a write lock held past busy_timeout, a closed database, a missing
// table or column (a deploy mistake) are store-unavailable; CHECK, NOT
// NULL and a STRICT table's type mismatch are invalid data; a unique
// violation or a syntax error is neither.
func TestClassifyError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testdb.SQLitePath(t)
	store, err := sqlitestore.Open(ctx, path, &sqlitestore.Config{BusyTimeout: time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	db := store.DB()
	_, err = db.ExecContext(ctx, `CREATE TABLE classify (v TEXT UNIQUE CHECK (v <> 'no'), n INTEGER NOT NULL) STRICT`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO classify VALUES ('taken', 1)`)
	require.NoError(t, err)
	for q, class := range map[string]string{
		`INSERT INTO classify VALUES ('no', 1)`:    "invalid",     // SQLITE_CONSTRAINT_CHECK
		`INSERT INTO classify VALUES ('ok', NULL)`: "invalid",     // SQLITE_CONSTRAINT_NOTNULL
		`INSERT INTO classify VALUES ('ok', 'x')`:  "invalid",     // SQLITE_CONSTRAINT_DATATYPE
		`INSERT INTO classify VALUES ('taken', 2)`: "other",       // SQLITE_CONSTRAINT_UNIQUE
		`INSERT INTO nowhere VALUES (1)`:           "unavailable", // SQLITE_ERROR no such table: not migrated
		`SELECT nope FROM classify`:                "unavailable", // SQLITE_ERROR no such column: behind the code
		`SELEC 1`:                                  "other",       // SQLITE_ERROR syntax error
	} {
		_, err := db.ExecContext(ctx, q)
		require.Error(t, err, q)
		require.Equal(t, class, classOf(store.ClassifyError(err)), "%s: %v", q, err)
		require.Equal(t, strings.Contains(q, "nowhere") || strings.Contains(q, "nope"),
			errors.Is(store.ClassifyError(err), ackgap.ErrStoreMisconfigured), "%s: %v", q, err)
	}

	// Another connection holds the write lock past busy_timeout (1 ms).
	other, err := sqlitestore.Open(ctx, path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	conn, err := other.DB().Conn(ctx)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO classify VALUES ('busy', 1)`)
	require.Error(t, err)
	require.Equal(t, "unavailable", classOf(store.ClassifyError(err)), "SQLITE_BUSY: %v", err)
	_, err = conn.ExecContext(ctx, `ROLLBACK`)
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	closed, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, err = closed.ExecContext(ctx, `SELECT 1`)
	require.Equal(t, "unavailable", classOf(store.ClassifyError(err)), "a closed database: %v", err)

	require.NoError(t, store.ClassifyError(nil))
	plain := errors.New("the handler's own failure")
	require.Same(t, plain, store.ClassifyError(plain))
}

// TestInboxClassifiesHandlerErrors: a handler's own statement on its
// *sql.Tx that SQLite refuses for its data is dead-lettered at once
// (permanent, invalid_data); one on a table the deploy forgot to create is
// store-unavailable; any other error is the handler's own; each time
// nothing is committed.
func TestInboxClassifiesHandlerErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := setup(t)
	_, err := store.DB().ExecContext(ctx, `CREATE TABLE classify (v TEXT CHECK (v <> 'no'))`)
	require.NoError(t, err)
	inbox, err := middleware.Inbox[*sql.Tx](store, &middleware.InboxConfig{Consumer: "c1"})
	require.NoError(t, err)
	for i, c := range []struct{ stmt, class string }{
		{`INSERT INTO classify VALUES ('no')`, "invalid"},
		{`INSERT INTO nowhere VALUES (1)`, "unavailable"}, // the handler's own table missing: a deploy mistake
		{`SELEC 1`, "other"},
	} {
		msg := message.NewMessage(watermill.NewUUID(), []byte(`{}`))
		msg.Metadata.Set(ackgap.MetadataEventIDKey, fmt.Sprintf("e%d", i))
		_, err := inbox(func(msg *message.Message) ([]*message.Message, error) {
			tx, ok := ackgap.TxFromContext[*sql.Tx](msg.Context())
			if !ok {
				return nil, ackgap.ErrNoTransaction
			}
			_, err := tx.ExecContext(msg.Context(), c.stmt)
			return nil, err
		})(msg)
		require.Error(t, err)
		require.Equal(t, c.class, classOf(err), "%s: %v", c.stmt, err)
	}
	var n int
	require.NoError(t, store.DB().QueryRowContext(ctx, `SELECT count(*) FROM ackgap_inbox`).Scan(&n))
	require.Zero(t, n, "every transaction rolled back, inbox rows included")
}
