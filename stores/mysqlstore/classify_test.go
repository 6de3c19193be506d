package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
)

// TestClassifyError provokes each class on the real server: a deadlock
// (1213) and a lock-wait timeout (1205) are store-unavailable, a missing
// table and an unknown user or wrong password (1698, 1045) are
// misconfigured, a NULL in a NOT NULL column is invalid data, a
// duplicate key on the handler's own table is left alone.
func TestClassifyError(t *testing.T) {
	store := setup(t)
	ctx := context.Background()
	db := store.DB()
	_, err := db.ExecContext(ctx, `CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO t VALUES (1, 0), (2, 0)`)
	require.NoError(t, err)
	begin := func() *sql.Tx {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback() })
		return tx
	}

	t.Run("deadlock 1213", func(t *testing.T) {
		a, b := begin(), begin()
		_, err := a.ExecContext(ctx, `UPDATE t SET v = v + 1 WHERE id = 1`)
		require.NoError(t, err)
		_, err = b.ExecContext(ctx, `UPDATE t SET v = v + 1 WHERE id = 2`)
		require.NoError(t, err)
		errA := make(chan error, 1)
		go func() { _, err := a.ExecContext(ctx, `UPDATE t SET v = v + 1 WHERE id = 2`); errA <- err }()
		_, errB := b.ExecContext(ctx, `UPDATE t SET v = v + 1 WHERE id = 1`)
		// One of the two is chosen as the victim; roll back both so the
		// other's statement returns.
		if errB != nil {
			_ = b.Rollback()
		}
		err = <-errA
		_ = a.Rollback()
		_ = b.Rollback()
		victim := errB
		if victim == nil {
			victim = err
		}
		require.Error(t, victim)
		c := store.ClassifyError(victim)
		require.ErrorIs(t, c, ackgap.ErrStoreUnavailable, "%v", victim)
		require.False(t, ackgap.IsPermanent(c))
	})

	t.Run("lock wait timeout 1205", func(t *testing.T) {
		a, b := begin(), begin()
		_, err := a.ExecContext(ctx, `UPDATE t SET v = v + 1 WHERE id = 1`)
		require.NoError(t, err)
		_, err = b.ExecContext(ctx, `SET SESSION innodb_lock_wait_timeout = 1`)
		require.NoError(t, err)
		_, err = b.ExecContext(ctx, `UPDATE t SET v = v + 1 WHERE id = 1`)
		require.Error(t, err)
		require.ErrorIs(t, store.ClassifyError(err), ackgap.ErrStoreUnavailable, "%v", err)
		_, _ = b.ExecContext(ctx, `SET SESSION innodb_lock_wait_timeout = DEFAULT`)
		require.NoError(t, a.Rollback())
		require.NoError(t, b.Rollback())
	})

	t.Run("unknown user", func(t *testing.T) {
		// MariaDB answers an unknown user without a password with 1698,
		// a wrong password with 1045: both a deploy mistake, redelivered.
		cfg, err := mysql.ParseDSN(testdb.MySQLDSN())
		require.NoError(t, err)
		for _, login := range []struct{ user, passwd string }{{"ackgap_no_such_user", ""}, {cfg.User, "wrong-password"}} {
			bad := cfg.Clone()
			bad.User, bad.Passwd = login.user, login.passwd
			other, err := sql.Open("mysql", bad.FormatDSN())
			require.NoError(t, err)
			err = other.PingContext(ctx)
			_ = other.Close()
			require.Error(t, err)
			c := store.ClassifyError(err)
			require.ErrorIs(t, c, ackgap.ErrStoreMisconfigured, "%v", err)
			require.ErrorIs(t, c, ackgap.ErrStoreUnavailable, "%v", err)
		}
	})

	t.Run("no such table", func(t *testing.T) {
		_, err := db.ExecContext(ctx, `UPDATE nope SET v = 1`)
		c := store.ClassifyError(err)
		require.ErrorIs(t, c, ackgap.ErrStoreUnavailable)
		require.ErrorIs(t, c, ackgap.ErrStoreMisconfigured)
	})

	t.Run("NULL in NOT NULL", func(t *testing.T) {
		_, err := db.ExecContext(ctx, `INSERT INTO t VALUES (3, NULL)`)
		c := store.ClassifyError(err)
		require.True(t, ackgap.IsPermanent(c), "%v", err)
		require.ErrorIs(t, c, ackgap.ErrInvalidData)
	})

	t.Run("duplicate key on the handler's table", func(t *testing.T) {
		_, err := db.ExecContext(ctx, `INSERT INTO t VALUES (1, 0)`)
		require.Error(t, err)
		c := store.ClassifyError(err)
		require.False(t, errors.Is(c, ackgap.ErrStoreUnavailable))
		require.False(t, ackgap.IsPermanent(c))
	})
}
