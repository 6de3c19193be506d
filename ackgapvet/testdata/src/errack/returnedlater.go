package errack

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"

	"github.com/hibiken/asynq"
)

// Reminder sends a renewal webhook, records the outcome in an audit row,
// then returns the send's failure (field trial, wave 54: EchoBilling): the
// failure recorded first is returned before the nil, so no finding.
type Reminder struct {
	db     *sql.DB
	client *http.Client
}

func (h *Reminder) ProcessTask(ctx context.Context, t *asynq.Task) error {
	action := "renewal_reminder_sent"
	resp, notifyErr := h.client.Post("https://hooks.example/renewal", "application/json", nil)
	if notifyErr != nil {
		action = "renewal_reminder_failed"
	} else {
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			return fmt.Errorf("renewal webhook: status %d", resp.StatusCode)
		}
	}
	if _, err := h.db.ExecContext(ctx, "INSERT INTO audit (action) VALUES ($1)", action); err != nil {
		return err
	}
	if notifyErr != nil {
		return fmt.Errorf("renewal webhook: %w", notifyErr)
	}
	return nil
}

func registerReminder(mux *asynq.ServeMux) {
	mux.Handle("renewal", &Reminder{})
}
