package checkact

import (
	"context"
	"database/sql"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ackgap/ackgap/router"
)

func register(r *router.Router[*sql.Tx], wr *message.Router) {
	_ = r.AddHandler("payments", "orders", nil, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM processed WHERE event_id = $1", msg.UUID).Scan(&n); err != nil { // want `medium: checks for the id in processed, then inserts it at line \d+: two concurrent deliveries both pass the check`
			return err
		}
		if n > 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO processed (event_id) VALUES ($1)", msg.UUID)
		return err
	})
	_ = r.AddHandler("payments2", "orders", nil, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		var state string
		if err := tx.QueryRowContext(ctx, "SELECT state FROM orders WHERE id = $1", msg.UUID).Scan(&state); err != nil { // clean: the insert goes elsewhere and dedupes itself
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO processed (event_id) VALUES ($1) ON CONFLICT DO NOTHING", msg.UUID)
		return err
	})
	d := middleware.Deduplicator{Timeout: time.Minute} // want `medium: Watermill's Deduplicator as the only guard keeps keys in memory`
	wr.AddMiddleware(d.Middleware)
}

func registerLake(wr *message.Router, db *sql.DB) {
	wr.AddNoPublisherHandler("lake", "events", nil, func(msg *message.Message) error {
		_, err := db.ExecContext(msg.Context(), "INSERT INTO events (event_id, payload) VALUES ($1, $2)", msg.UUID, msg.Payload) // want `inserts the message's id \(msg.UUID\) on the consumer path of watermill handler \(func literal\) without ON CONFLICT`
		return err
	})
	wr.AddNoPublisherHandler("lake2", "events", nil, func(msg *message.Message) error {
		_, err := db.ExecContext(msg.Context(), "INSERT INTO events (event_id, payload) VALUES ($1, $2) ON CONFLICT DO NOTHING", msg.UUID, msg.Payload) // clean
		return err
	})
	wr.AddNoPublisherHandler("lake3", "events", nil, func(msg *message.Message) error {
		tx, err := db.BeginTx(msg.Context(), nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		res, err := tx.ExecContext(msg.Context(), "INSERT INTO processed (event_id) VALUES ($1) ON CONFLICT DO NOTHING", msg.UUID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		// clean: the inbox above, in the same transaction, let only a new event through (field trial, wave 51: omniflow)
		if _, err := tx.ExecContext(msg.Context(), "INSERT INTO movements (event_id, payload) VALUES ($1, $2)", msg.UUID, msg.Payload); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// DBTX is sqlc's interface over a pool or a transaction.
type DBTX interface {
	ExecContext(context.Context, string, ...interface{}) (sql.Result, error)
}

type Queries struct{ db DBTX }

type CreateEmailLogParams struct{ MessageID, Recipient string }

const createEmailLog = `-- name: CreateEmailLog :exec
INSERT INTO email_logs (message_id, recipient)
VALUES ($1, $2)
`

func (q *Queries) CreateEmailLog(ctx context.Context, arg CreateEmailLogParams) error {
	_, err := q.db.ExecContext(ctx, createEmailLog, arg.MessageID, arg.Recipient) // want `inserts the message's id \(arg.MessageID\)`
	return err
}

func registerSqlc(wr *message.Router, q *Queries) {
	wr.AddNoPublisherHandler("email", "emails", nil, func(msg *message.Message) error {
		return q.CreateEmailLog(msg.Context(), CreateEmailLogParams{MessageID: msg.UUID})
	})
}
