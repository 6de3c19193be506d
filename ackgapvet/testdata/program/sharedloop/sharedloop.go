// Package sharedloop runs two services' handlers on one shared receive
// loop (field trial, wave 22: event-driven-crm's internal/kafka Run): the
// customer handler's ON CONFLICT dedupes its own rows, not the
// notification handler's.
package sharedloop

import (
	"context"
	"database/sql"

	"github.com/segmentio/kafka-go"
)

// Run fetches, hands each message to h and commits it.
func Run(ctx context.Context, r *kafka.Reader, h func(context.Context, kafka.Message) error) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := h(ctx, m); err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// Services holds the database.
type Services struct{ DB *sql.DB }

// Customers records a lead once.
func (s *Services) Customers(ctx context.Context, m kafka.Message) error {
	_, err := s.DB.ExecContext(ctx, "INSERT INTO customers (lead_id) VALUES ($1) ON CONFLICT (lead_id) DO NOTHING", string(m.Value))
	return err
}

// Notifications adds a row per delivery.
func (s *Services) Notifications(ctx context.Context, m kafka.Message) error {
	_, err := s.DB.ExecContext(ctx, "INSERT INTO notifications (body) VALUES ($1)", string(m.Value))
	return err
}

// Start runs both services' consumers.
func Start(ctx context.Context, r1, r2 *kafka.Reader, s *Services) {
	go Run(ctx, r1, s.Customers)
	go Run(ctx, r2, s.Notifications)
}
