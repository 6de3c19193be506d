// Package sqlitebrokertest is the brokertest.StoreFactory the broker
// adapters of this module run the redelivery suite with: a SQLite file
// per test, shared by the test and its child processes. It lives apart
// from package brokertest so that the suite depends on no store.
package sqlitebrokertest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// Store returns a StoreFactory on SQLite files: Create makes a migrated
// file in t.TempDir() with a table "applied" (event_id, no unique key),
// whose path is the DSN.
func Store() brokertest.StoreFactory[*sql.Tx] {
	return brokertest.StoreFactory[*sql.Tx]{Create: create, Open: open, Apply: apply, Applied: applied}
}

func create(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dsn := t.TempDir() + "/brokertest.db"
	store, err := sqlitestore.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatalf("sqlitebrokertest: open %s: %v", dsn, err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		t.Fatalf("sqlitebrokertest: migrate: %v", err)
	}
	if _, err := store.DB().Exec(`CREATE TABLE applied (event_id TEXT NOT NULL)`); err != nil {
		t.Fatalf("sqlitebrokertest: create table applied: %v", err)
	}
	return dsn
}

func open(ctx context.Context, dsn string) (stores.Store[*sql.Tx], func() error, error) {
	store, err := sqlitestore.Open(ctx, dsn, nil)
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
	store, err := sqlitestore.Open(ctx, dsn, nil)
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
