package idemkey

import (
	"context"
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
)

// loggedTx is an application's concrete wrapper over *sql.Tx that logs
// each statement (wave 17, go-cqrs-chat-example's db.Tx): its ExecContext
// is a database call whose SQL is the caller's.
type loggedTx struct {
	*sql.Tx
	prefix string
}

func (t *loggedTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	println(t.prefix, q)
	return t.Tx.ExecContext(ctx, q, args...)
}

func registerUnread(r *message.Router, tx *loggedTx) {
	r.AddNoPublisherHandler("unread", "messages", nil, func(msg *message.Message) error {
		_, err := tx.ExecContext(msg.Context(), "UPDATE unread SET count = count + 1 WHERE user_id = $1", msg.UUID) // want `medium: increments count with no dedupe record in the same transaction`
		return err
	})
}
