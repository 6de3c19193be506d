package billingsim

import (
	"context"
	"fmt"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
)

// soakDB is the soak's database as the parent process uses it, on either
// store: its own orders SQL and the store's operator API, where the
// children find it, and the two server-side readings of the report.
type soakDB struct {
	// store is SoakStorePostgres or SoakStoreMariaDB; location says where
	// the soak's schema or database is.
	store, location string
	// schema is the PostgreSQL schema or the MariaDB database of the run;
	// childDSN is the DSN the children open (on MariaDB, with schema as
	// its database).
	schema, childDSN string
	db               appDB
	outbox           stores.Operator
	// childConns counts the server's connections of the consumer and
	// relay processes.
	childConns func(ctx context.Context) (int64, error)
	// tableBytes is the size of the run's tables, data and indexes.
	tableBytes func(ctx context.Context) (int64, error)
	// close closes the parent's pool and drops the schema or database.
	close func() error
}

// openSoakDB creates the soak's schema (PostgreSQL) or database (MariaDB,
// when isMySQL(dsn)) on the server dsn names, with the store's tables
// migrated.
func openSoakDB(ctx context.Context, dsn string) (*soakDB, error) {
	if isMySQL(dsn) {
		return openSoakMariaDB(ctx, dsn)
	}
	b, err := openPostgres(ctx, dsn, 8, false)
	if err != nil {
		return nil, err
	}
	appName := "ackgap-soak-" + b.schema
	d := &soakDB{
		store: SoakStorePostgres, location: b.location, schema: b.schema, childDSN: dsn,
		db: b.db, outbox: b.outbox, close: b.close,
		childConns: func(ctx context.Context) (int64, error) {
			return b.db.queryInt(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = `+quoteLiteral(appName))
		},
		tableBytes: func(ctx context.Context) (int64, error) {
			return b.db.queryInt(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
				JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = `+quoteLiteral(b.schema)+` AND c.relkind = 'r'`)
		},
	}
	return d, d.migrate(ctx)
}

// openSoakMariaDB is openSoakDB on MariaDB: a database billing_<hex> of
// its own on the server dsn names.
func openSoakMariaDB(ctx context.Context, dsn string) (*soakDB, error) {
	cfg, err := mysqlstore.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	b, err := openMySQL(ctx, dsn, false)
	if err != nil {
		return nil, err
	}
	store, ok := b.outbox.(*mysqlstore.Store)
	if !ok {
		return nil, fmt.Errorf("soak: mariadb backend's store is %T", b.outbox)
	}
	pool := store.DB()
	cfg.DBName = b.schema
	d := &soakDB{
		store: SoakStoreMariaDB, location: b.location, schema: b.schema, childDSN: cfg.FormatDSN(),
		db: b.db, outbox: b.outbox, close: b.close,
		// The parent's pool is in the same database: PROCESSLIST cannot
		// tell its connections from the children's (no application name
		// without performance_schema), so they are counted on one pinned
		// connection and subtracted.
		childConns: func(ctx context.Context) (int64, error) {
			conn, err := pool.Conn(ctx)
			if err != nil {
				return 0, err
			}
			defer conn.Close()
			var n int64
			if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = ?`, b.schema).Scan(&n); err != nil {
				return 0, err
			}
			return n - int64(pool.Stats().OpenConnections), nil
		},
		tableBytes: func(ctx context.Context) (int64, error) {
			var n int64
			err := pool.QueryRowContext(ctx, `SELECT CAST(coalesce(sum(data_length + index_length), 0) AS SIGNED) FROM information_schema.TABLES WHERE table_schema = ?`, b.schema).Scan(&n)
			return n, err
		},
	}
	return d, d.migrate(ctx)
}

// migrate creates the store's tables and the orders table; on error it
// closes d.
func (d *soakDB) migrate(ctx context.Context) error {
	var err error
	if _, err = d.outbox.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		err = fmt.Errorf("migrate: %w", err)
	} else {
		err = createOrders(ctx, d.db, nil)
	}
	if err != nil {
		if cerr := d.close(); cerr != nil {
			err = fmt.Errorf("%w (and close: %v)", err, cerr)
		}
	}
	return err
}
