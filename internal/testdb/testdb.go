// Package testdb gives tests a real PostgreSQL schema or SQLite file of
// their own. PostgreSQL is found through TEST_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable); each call
// creates a schema with a random name, returns a pool whose search_path is
// that schema, and drops the schema when the test ends.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// URLDefault is the database tests use when TEST_DATABASE_URL is unset.
const URLDefault = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL returns TEST_DATABASE_URL or URLDefault.
func URL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return URLDefault
}

// Schema creates a fresh schema and returns a pool of at most maxConns
// connections (0 = pgxpool's default) whose search_path is that schema,
// and the schema's name. Both are cleaned up when t ends. A database that
// cannot be reached fails the test: the suite needs a real PostgreSQL.
func Schema(t testing.TB, maxConns int32) (*pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	schema := "t_" + randomHex(8)
	admin, err := pgx.Connect(ctx, URL())
	if err != nil {
		t.Fatalf("testdb: connect to %s: %v (start PostgreSQL or set TEST_DATABASE_URL)", URL(), err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("testdb: create schema: %v", err)
	}
	pool, err := Open(ctx, schema, maxConns)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		// A test that failed mid-transaction may leave a connection
		// acquired, and pool.Close waits for it: bound the wait, so the
		// failure is reported instead of hanging until the test timeout.
		closed := make(chan struct{})
		go func() {
			pool.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(cleanupWait):
			t.Errorf("testdb: schema %s: a pool connection is still acquired %s after the test (a transaction left open?)", schema, cleanupWait)
		}
		c, err := pgx.Connect(context.Background(), URL())
		if err != nil {
			t.Errorf("testdb: drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(context.Background())
		// The same open transaction may hold locks in the schema.
		if _, err := c.Exec(context.Background(), "SET lock_timeout = '10s'"); err != nil {
			t.Errorf("testdb: drop schema %s: %v", schema, err)
			return
		}
		if _, err := c.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("testdb: drop schema %s: %v", schema, err)
		}
	})
	return pool, schema
}

// Open returns a pool of at most maxConns connections (0 = pgxpool's
// default) to the database of URL whose search_path is schema, an
// existing schema: a child process's way into the schema its parent test
// made with [Schema]. Its connections' application_name is schema too
// (unless URL sets one), so [Terminate] finds them. The caller closes
// the pool.
func Open(ctx context.Context, schema string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(URL())
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set {
		cfg.ConnConfig.RuntimeParams["application_name"] = schema
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pool: %w", err)
	}
	return pool, nil
}

// Terminate cuts every server connection of schema's pools ([Open]: by
// application_name) with pg_terminate_backend, as a database restart or a
// network cut does to them, and returns how many it cut. Connections of
// other tests are left alone.
func Terminate(ctx context.Context, schema string) (int, error) {
	c, err := pgx.Connect(ctx, URL())
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	var n int
	err = c.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE application_name = $1 AND pid <> pg_backend_pid()`, schema).Scan(&n)
	return n, err
}

// cleanupWait bounds how long a test's cleanup waits for its pool's
// connections to come back.
const cleanupWait = 10 * time.Second

// SQLitePath returns the path of a new SQLite file in t's temp dir.
func SQLitePath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "ackgap.db")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
