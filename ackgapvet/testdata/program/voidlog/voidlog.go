// Package voidlog turns a consumer's failed work into nothing in three
// ways the field trial found (waves 24 and 25): a failure logged in a
// helper with no result (IM H3, stablesando H5), a write's error dropped
// before `return nil` (stablesando H4), and a delete deferred through the
// code's own wrapper (sqs-reader-service H1).
package voidlog

import (
	"context"
	"database/sql"
	"log"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/segmentio/kafka-go"
)

// Store wraps the database.
type Store struct{ db *sql.DB }

// Save inserts a copy and returns the insert's error.
func (s *Store) Save(ctx context.Context, body []byte) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO offline_copies (body) VALUES ($1)", body)
	return err
}

// UC is the use case the loops call.
type UC struct{ store *Store }

// saveOffline logs the failed insert and returns nothing: Deliver cannot
// see it.
func (u *UC) saveOffline(ctx context.Context, body []byte) {
	if err := u.store.Save(ctx, body); err != nil {
		log.Printf("save failed: %v", err)
	}
}

// Deliver returns nil after the helper; Run commits on that nil.
func (u *UC) Deliver(ctx context.Context, body []byte) error {
	u.saveOffline(ctx, body)
	return nil
}

// record drops the insert's error and returns nil.
func (u *UC) record(ctx context.Context, body []byte) error {
	u.store.Save(ctx, body)
	return nil
}

// audit reads its error: the good twin of saveOffline.
func (u *UC) audit(ctx context.Context, body []byte) error {
	return u.store.Save(ctx, body)
}

// Run commits each message whose Deliver returned nil.
func Run(ctx context.Context, r *kafka.Reader, u *UC) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := u.Deliver(ctx, m.Value); err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// Record commits each message whose record (or audit) returned nil.
func Record(ctx context.Context, r *kafka.Reader, u *UC) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := u.record(ctx, m.Value); err != nil {
			return
		}
		if err := u.audit(ctx, m.Value); err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// Queue is the code's own SQS wrapper.
type Queue struct{ c *sqs.Client }

// Delete deletes one message.
func (q *Queue) Delete(ctx context.Context, m sqs.Message) error {
	_, err := q.c.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: m.ReceiptHandle})
	return err
}

// Handler saves messages.
type Handler struct {
	q     *Queue
	store *Store
}

func (h *Handler) remove(ctx context.Context, m sqs.Message) {
	if err := h.q.Delete(ctx, m); err != nil {
		log.Print(err)
	}
}

// finish deletes only a message whose work succeeded.
func (h *Handler) finish(ctx context.Context, m sqs.Message, err *error) {
	if *err == nil {
		h.remove(ctx, m)
	}
}

// save defers the delete through remove: a failed insert is deleted too.
func (h *Handler) save(ctx context.Context, m sqs.Message) error {
	defer h.remove(ctx, m)
	return h.store.Save(ctx, []byte(*m.Body))
}

// keep defers finish, which reads the result: no finding.
func (h *Handler) keep(ctx context.Context, m sqs.Message) (err error) {
	defer h.finish(ctx, m, &err)
	return h.store.Save(ctx, []byte(*m.Body))
}

// Poll receives and saves.
func (h *Handler) Poll(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := h.q.c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if err := h.save(ctx, m); err != nil {
				log.Print(err)
			}
			_ = h.keep(ctx, m)
		}
	}
}
