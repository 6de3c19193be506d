package checkact

import (
	"context"
	"database/sql"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DedupeStore is the application's dedupe table behind an interface.
type DedupeStore interface {
	IsProcessed(ctx context.Context, id string) (bool, error)
	MarkProcessed(ctx context.Context, id string) error
}

// Payer makes the payment.
type Payer interface {
	Pay(ctx context.Context, body string) error
}

type worker struct {
	store DedupeStore
	payer Payer
	db    *sql.DB
	c     *http.Client
	sqs   *sqs.Client
}

// handle checks, pays, then marks: two steps around the work.
func (w *worker) handle(ctx context.Context, id, body string) error {
	done, err := w.store.IsProcessed(ctx, id) // want `checks whether the message was handled \(w.store.IsProcessed\), does the work \(a call to w.payer.Pay at line \d+\), then marks it \(w.store.MarkProcessed at line \d+\) in a separate step`
	if err != nil || done {
		return err
	}
	if err := w.payer.Pay(ctx, body); err != nil {
		return err
	}
	return w.store.MarkProcessed(ctx, id)
}

func (w *worker) loop(ctx context.Context) {
	for {
		out, err := w.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if err := w.handle(ctx, *m.MessageId, *m.Body); err != nil {
				continue
			}
			w.seenHTTP(ctx, m.MessageId, *m.Body)
			w.markOther(ctx, m.MessageId, *m.Body)
			_ = w.inTx(ctx, *m.MessageId, *m.Body)
			w.handleJob(ctx, &job{ID: *m.MessageId, Body: *m.Body})
			_, _ = w.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// seenHTTP does the same with a direct POST.
func (w *worker) seenHTTP(ctx context.Context, mid *string, body string) {
	if ok, _ := w.store.IsProcessed(ctx, *mid); ok { // want `does the work \(an HTTP request \(http.Client.Post\) at line \d+\), then marks it \(w.store.MarkProcessed`
		return
	}
	_, _ = w.c.Post("http://pay.local", "text/plain", strings.NewReader(body))
	_ = w.store.MarkProcessed(ctx, *mid)
}

// markOther marks another key than it checked: not this rule's.
func (w *worker) markOther(ctx context.Context, mid *string, body string) {
	if ok, _ := w.store.IsProcessed(ctx, *mid); ok {
		return
	}
	_, _ = w.c.Post("http://pay.local", "text/plain", strings.NewReader(body))
	_ = w.store.MarkProcessed(ctx, body)
}

// inTx holds a transaction over the check, the work and the mark: clean.
func (w *worker) inTx(ctx context.Context, id, body string) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if done, _ := w.store.IsProcessed(ctx, id); done {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET paid = true WHERE id = $1", body); err != nil {
		return err
	}
	_ = w.store.MarkProcessed(ctx, id)
	return tx.Commit()
}

// job is one message handed to a worker.
type job struct{ ID, Body string }

// handleJob checks, hands the job to its own method, then marks: the work
// is whatever process reaches.
func (w *worker) handleJob(ctx context.Context, j *job) {
	if done, _ := w.store.IsProcessed(ctx, j.ID); done { // want `does the work \(a call to w.process at line \d+\), then marks it \(w.store.MarkProcessed`
		return
	}
	if !w.process(ctx, j) {
		return
	}
	_ = w.store.MarkProcessed(ctx, j.ID)
}

func (w *worker) process(ctx context.Context, j *job) bool {
	return w.payer.Pay(ctx, j.Body) == nil
}
