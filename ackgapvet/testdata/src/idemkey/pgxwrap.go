package idemkey

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgconn"
)

// executor is an application's wrapper over pgx (a transaction taken from
// the context, else the pool): its Exec is a database call.
type executor struct{}

func (e *executor) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, nil
}

func registerRatings(r *message.Router, db *executor) {
	r.AddNoPublisherHandler("ratings", "reviews", nil, func(msg *message.Message) error {
		_, err := db.Exec(msg.Context(), "INSERT INTO org_ratings (org_id, pending) VALUES ($1, 1) ON CONFLICT (org_id) DO UPDATE SET pending = org_ratings.pending + 1", msg.UUID) // want `medium: increments pending with no dedupe record in the same transaction`
		return err
	})
}
