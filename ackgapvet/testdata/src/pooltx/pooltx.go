package pooltx

import (
	"context"
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ackgap/ackgap/router"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func register(r *router.Router[*sql.Tx], db *sql.DB) {
	_ = r.AddHandler("stock", "orders", nil, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM inventory").Scan(&n); err != nil { // clean: a read
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE orders SET state = 'reserved' WHERE id = $1", msg.UUID); err != nil { // clean
			return err
		}
		_, err := db.ExecContext(ctx, "UPDATE inventory SET reserved = reserved + 1 WHERE sku = $1", msg.UUID) // want `medium: writes through db instead of the transaction tx on the consumer path of ackgap handler \(func literal\), while a database transaction is open: .*; use tx`
		return err
	})
}

func apply(ctx context.Context, tx pgx.Tx, pool *pgxpool.Pool) error {
	if _, err := tx.Exec(ctx, "INSERT INTO ledger VALUES (1)"); err != nil { // clean
		return err
	}
	_, err := pool.Exec(ctx, "INSERT INTO payments VALUES (1)") // want `critical: writes through pool instead of the transaction tx while a database transaction is open`
	return err
}

func noTx(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, "INSERT INTO payments VALUES (1)") // clean: no transaction here
	return err
}

// saveStatus writes through the transaction it is given, or through the
// pool when it is given none (field trial, wave 42: rider-service): clean.
func saveStatus(ctx context.Context, tx *sql.Tx, db *sql.DB, id string) error {
	var err error
	if tx != nil {
		_, err = tx.ExecContext(ctx, "UPDATE deliveries SET status = 'sent' WHERE id = $1", id)
	} else {
		_, err = db.ExecContext(ctx, "UPDATE deliveries SET status = 'sent' WHERE id = $1", id) // clean: no transaction in this branch
	}
	if tx == nil {
		_, err = db.ExecContext(ctx, "UPDATE deliveries SET seen = true WHERE id = $1", id) // clean: no transaction in this branch
	}
	return err
}

// markSent returns from the transaction's branch and writes through the
// pool after it (field trial, wave 42: rider-service): clean.
func markSent(ctx context.Context, tx *sql.Tx, db *sql.DB, id string) error {
	if tx != nil {
		_, err := tx.ExecContext(ctx, "UPDATE deliveries SET status = 'sent' WHERE id = $1", id)
		return err
	}
	_, err := db.ExecContext(ctx, "UPDATE deliveries SET status = 'sent' WHERE id = $1", id) // clean: no transaction here
	return err
}

// openHere begins a transaction and writes through it and through the
// pool: the pool's write does not roll back with the transaction.
func openHere(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO ledger VALUES (2)"); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, "INSERT INTO payments VALUES (2)"); err != nil { // want `writes through pool while a database transaction is open in this function`
		return err
	}
	return tx.Commit(ctx)
}

// unusedTx begins a transaction that carries no statement (field trial,
// wave 59: notifi's repositories): the pool's write is the only one, and
// nothing could roll back with it.
func unusedTx(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := pool.Exec(ctx, "UPDATE users SET name = $1", "x"); err != nil { // clean: an unused transaction
		return err
	}
	return tx.Commit(ctx)
}
