package pgxstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
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

// TestClassifyError: every SQLSTATE of docs/errors.md gets its class, from
// a real server: raised codes for the conditions a test cannot provoke
// (a serialization failure, a full disk), and real statements for the
// data errors and for a deadline spent waiting on the server.
func TestClassifyError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, pool := migrated(t, nil)
	raise := func(code string) error {
		_, err := pool.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN RAISE EXCEPTION 'raised %[1]s' USING ERRCODE = '%[1]s'; END $$`, code))
		require.Error(t, err)
		return err
	}
	want := map[string]string{
		"08000": "unavailable", "08006": "unavailable", "40001": "unavailable", "40P01": "unavailable",
		"53100": "unavailable", "53200": "unavailable", "53300": "unavailable", "55P03": "unavailable",
		"55006": "unavailable", "57014": "unavailable", "57P01": "unavailable", "57P02": "unavailable",
		"57P03": "unavailable", "58030": "unavailable",
		"22021": "invalid", "22001": "invalid", "22003": "invalid", "22P02": "invalid", "22012": "invalid",
		"23514": "invalid", "23502": "invalid",
		// A database not set up for the code: a deploy mistake, redelivered.
		"42P01": "unavailable", "42703": "unavailable", "3F000": "unavailable", "3D000": "unavailable",
		"42501": "unavailable", "28000": "unavailable", "28P01": "unavailable",
		"23505": "other", "23503": "other", "42601": "other", "42883": "other", "P0001": "other",
	}
	for code, class := range want {
		err := store.ClassifyError(raise(code))
		if class == "unavailable" {
			require.False(t, ackgap.IsPermanent(err), "SQLSTATE %s", code)
		}
		deploy := class == "unavailable" && strings.Contains(" 42 3F 3D 28 ", " "+code[:2]+" ")
		require.Equal(t, deploy, errors.Is(err, ackgap.ErrStoreMisconfigured), "SQLSTATE %s: %v", code, err)
		require.Equal(t, class, classOf(err), "SQLSTATE %s: %v", code, err)
		require.Equal(t, class == "invalid", ackgap.IsPermanent(err), "SQLSTATE %s", code)
	}

	_, err := pool.Exec(ctx, `CREATE TABLE classify (v varchar(3) CHECK (v <> 'no'), n int NOT NULL)`)
	require.NoError(t, err)
	for q, class := range map[string]string{
		`SELECT convert_from('\xfffefa'::bytea, 'UTF8')`: "invalid", // 22021
		`INSERT INTO classify VALUES ('abcd', 1)`:        "invalid", // 22001
		`INSERT INTO classify VALUES ('no', 1)`:          "invalid", // 23514
		`INSERT INTO classify VALUES ('ok', NULL)`:       "invalid", // 23502
		`SELECT 1/0`:                  "invalid",     // 22012
		`SELECT * FROM no_such_table`: "unavailable", // 42P01
		`SELECT nope FROM classify`:   "unavailable", // 42703
		`SELECT * FROM nowhere.t`:     "unavailable", // 42P01 (schema missing)
		`SELEC 1`:                     "other",       // 42601
	} {
		_, err := pool.Exec(ctx, q)
		require.Error(t, err, q)
		require.Equal(t, class, classOf(store.ClassifyError(err)), "%s: %v", q, err)
	}

	waitCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = pool.Exec(waitCtx, `SELECT pg_sleep(30)`)
	require.Error(t, err)
	err = store.ClassifyError(err)
	require.Equal(t, "unavailable", classOf(err), "a deadline spent waiting on the server: %v", err)
	require.ErrorIs(t, err, context.DeadlineExceeded, "still says why")

	require.NoError(t, store.ClassifyError(nil))
	plain := errors.New("the handler's own failure")
	require.Same(t, plain, store.ClassifyError(plain))
	perm := ackgap.Permanent("account_closed", nil)
	require.Same(t, perm, store.ClassifyError(perm), "already classified")
}

// TestInboxClassifiesHandlerErrors: a handler's own statement on its pgx.Tx
// that the database refuses for its data is dead-lettered at once
// (permanent, invalid_data), one that meets a busy database is
// store-unavailable (redelivered), as is one on a table the deploy forgot
// to create, and any other error is the handler's own; each time nothing
// is committed.
func TestInboxClassifiesHandlerErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, pool := migrated(t, nil)
	inbox, err := middleware.Inbox[pgx.Tx](store, &middleware.InboxConfig{Consumer: "c1"})
	require.NoError(t, err)
	for i, c := range []struct{ stmt, class string }{
		{`SELECT convert_from('\xfffefa'::bytea, 'UTF8')`, "invalid"},
		{`DO $$ BEGIN RAISE EXCEPTION 'busy' USING ERRCODE = '40001'; END $$`, "unavailable"},
		{`DO $$ BEGIN RAISE EXCEPTION 'mine' USING ERRCODE = 'P0001'; END $$`, "other"},
		{`INSERT INTO orders_not_migrated VALUES (1)`, "unavailable"}, // the handler's own table missing: a deploy mistake
	} {
		msg := message.NewMessage(watermill.NewUUID(), []byte(`{}`))
		msg.Metadata.Set(ackgap.MetadataEventIDKey, fmt.Sprintf("e%d", i))
		_, err := inbox(func(msg *message.Message) ([]*message.Message, error) {
			tx, ok := ackgap.TxFromContext[pgx.Tx](msg.Context())
			if !ok {
				return nil, ackgap.ErrNoTransaction
			}
			_, err := tx.Exec(msg.Context(), c.stmt)
			return nil, err
		})(msg)
		require.Error(t, err)
		require.Equal(t, c.class, classOf(err), "%s: %v", c.stmt, err)
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM ackgap_inbox`).Scan(&n))
	require.Zero(t, n, "every transaction rolled back, inbox rows included")
}
