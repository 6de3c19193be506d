package errack

import (
	"context"
	"database/sql"
	"log"

	"github.com/ThreeDotsLabs/watermill/message"
)

// debit commits in a deferred function that only logs the commit's
// failure (wave 19, payment-processor H2): the handler returns nil, the
// router acks, and the rolled-back balance update is lost.
func debit(db *sql.DB) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		tx, err := db.BeginTx(msg.Context(), nil)
		if err != nil {
			return err
		}
		defer func() { // want `the deferred sql.Tx.Commit's error is only logged or dropped`
			if err := tx.Commit(); err != nil {
				log.Printf("commit: %v", err)
			}
		}()
		_, err = tx.Exec("UPDATE accounts SET balance = balance - 1 WHERE id = $1", msg.UUID)
		return err
	}
}

// credit defers the commit itself, its error dropped.
func credit(db *sql.DB) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		tx, err := db.BeginTx(msg.Context(), nil)
		if err != nil {
			return err
		}
		defer tx.Commit() // want `the deferred sql.Tx.Commit's error is only logged or dropped`
		_, err = tx.Exec("UPDATE accounts SET balance = balance + 1 WHERE id = $1", msg.UUID)
		return err
	}
}

// refund hands the commit's failure to its named result: clean.
func refund(ctx context.Context, db *sql.DB, id string) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
			return
		}
		err = tx.Commit()
	}()
	_, err = tx.Exec("UPDATE accounts SET refunded = true WHERE id = $1", id)
	return err
}

func registerLedger(r *message.Router, db *sql.DB) {
	r.AddNoPublisherHandler("debit", "t", nil, debit(db))
	r.AddNoPublisherHandler("credit", "t", nil, credit(db))
	r.AddNoPublisherHandler("refund", "t", nil, func(msg *message.Message) error {
		return refund(msg.Context(), db, msg.UUID)
	})
}
