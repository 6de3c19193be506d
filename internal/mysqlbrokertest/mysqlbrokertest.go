// Package mysqlbrokertest is the brokertest.StoreFactory on MariaDB that
// the broker adapters of this module run the redelivery suite with once
// (beside SQLite): a database per test, shared by the test and its child
// processes through its DSN.
package mysqlbrokertest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
)

// Store returns a StoreFactory on MariaDB: Create makes a migrated
// database (testdb.MySQLDatabase, dropped when the test ends) with a table
// "applied" (event_id, no unique key), whose driver DSN is the DSN.
func Store() brokertest.StoreFactory[*sql.Tx] {
	return brokertest.StoreFactory[*sql.Tx]{Create: create, Open: open, Apply: apply, Applied: applied}
}

// Or returns a factory whose Open, Apply and Applied go to Store's for a
// MariaDB DSN (one with "tcp(") and to other's otherwise: a test binary's
// suite children serve both stores (brokertest.RunChildIfRequested takes
// one factory).
func Or(other brokertest.StoreFactory[*sql.Tx]) brokertest.StoreFactory[*sql.Tx] {
	return brokertest.StoreFactory[*sql.Tx]{
		Create: other.Create,
		Open: func(ctx context.Context, dsn string) (stores.Store[*sql.Tx], func() error, error) {
			if isDSN(dsn) {
				return open(ctx, dsn)
			}
			return other.Open(ctx, dsn)
		},
		Apply: apply, // the same INSERT on both
		Applied: func(ctx context.Context, dsn string) (map[string]int, error) {
			if isDSN(dsn) {
				return applied(ctx, dsn)
			}
			return other.Applied(ctx, dsn)
		},
	}
}

func isDSN(dsn string) bool { return strings.Contains(dsn, "tcp(") }

func create(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.MySQLDatabase(t)
	store, err := mysqlstore.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatalf("mysqlbrokertest: open: %v", err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		t.Fatalf("mysqlbrokertest: migrate: %v", err)
	}
	if _, err := store.DB().Exec(`CREATE TABLE applied (event_id VARCHAR(255) NOT NULL)`); err != nil {
		t.Fatalf("mysqlbrokertest: create table applied: %v", err)
	}
	return dsn
}

func open(ctx context.Context, dsn string) (stores.Store[*sql.Tx], func() error, error) {
	store, err := mysqlstore.Open(ctx, dsn, nil)
	if err != nil {
		return nil, nil, err
	}
	return store, store.Close, nil
}

func apply(ctx context.Context, tx *sql.Tx, eventID string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO applied (event_id) VALUES (?)`, eventID)
	return err
}

func applied(ctx context.Context, dsn string) (map[string]int, error) {
	store, err := mysqlstore.Open(ctx, dsn, nil)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	rows, err := store.DB().QueryContext(ctx, `SELECT event_id, count(*) FROM applied GROUP BY event_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		counts[id] = n
	}
	return counts, rows.Err()
}
