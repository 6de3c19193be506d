package idemkey

import (
	"context"
	"database/sql"

	"github.com/IBM/sarama"
	"gorm.io/gorm"
)

// Account is a row read, changed in Go and saved.
type Account struct {
	ID      string
	Balance int64
}

type rmwHandler struct {
	db *sql.DB
	g  *gorm.DB
}

func (h *rmwHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *rmwHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *rmwHandler) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		if h.credit(s.Context(), string(m.Key)) != nil || h.creditGorm(string(m.Key)) != nil || h.guarded(s.Context(), string(m.Key)) != nil || h.copyOnly(s.Context(), string(m.Key)) != nil {
			return nil
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// credit reads a balance, adds in Go and writes it back.
func (h *rmwHandler) credit(ctx context.Context, id string) error {
	var bal int64
	if err := h.db.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = $1", id).Scan(&bal); err != nil {
		return err
	}
	next := bal + 100
	_, err := h.db.ExecContext(ctx, "UPDATE accounts SET balance = $1 WHERE id = $2", next, id) // want `writes back next, read from the database \(line 37\) and changed in Go \(line 40\)`
	return err
}

// creditGorm does the same through gorm.
func (h *rmwHandler) creditGorm(id string) error {
	var acct Account
	if err := h.g.First(&acct, "id = ?", id).Error; err != nil {
		return err
	}
	acct.Balance += 100
	return h.g.Save(&acct).Error // want `writes back acct, read from the database`
}

// guarded tests the value it read in its WHERE: a concurrent or repeated
// change fails the guard.
func (h *rmwHandler) guarded(ctx context.Context, id string) error {
	var bal int64
	if err := h.db.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = $1", id).Scan(&bal); err != nil {
		return err
	}
	_, err := h.db.ExecContext(ctx, "UPDATE accounts SET balance = $1 WHERE id = $2 AND balance = $3", bal+100, id, bal)
	return err
}

// copyOnly writes what it read, unchanged: idempotent.
func (h *rmwHandler) copyOnly(ctx context.Context, id string) error {
	var bal int64
	if err := h.db.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = $1", id).Scan(&bal); err != nil {
		return err
	}
	_, err := h.db.ExecContext(ctx, "UPDATE mirror SET balance = $1 WHERE id = $2", bal, id)
	return err
}
