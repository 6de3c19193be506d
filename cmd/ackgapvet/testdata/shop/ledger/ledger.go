// Package ledger writes through the pool beside its transaction: a finding
// with a suggested fix.
package ledger

import (
	"context"
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
)

func Register(r *message.Router, db *sql.DB) {
	r.AddNoPublisherHandler("ledger", "orders", nil, func(msg *message.Message) error {
		tx, err := db.BeginTx(msg.Context(), nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := apply(msg.Context(), tx, db, msg.UUID); err != nil {
			return err
		}
		return tx.Commit()
	})
}

func apply(ctx context.Context, tx *sql.Tx, db *sql.DB, id string) error {
	_, err := db.ExecContext(ctx, "INSERT INTO ledger VALUES ($1)", id)
	return err
}
