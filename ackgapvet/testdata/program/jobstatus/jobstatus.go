// Package jobstatus runs conversion jobs from a JetStream pull consumer.
// The worker skips (acks) a job it finds "processing", marks it
// "processing" itself, then publishes and works (field trial, wave 47:
// fyredocs' workers): a crash after the mark makes the redelivery find
// "processing" and ack it, so the job is never done.
package jobstatus

import (
	"context"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"gorm.io/gorm"
)

// Job is a conversion job.
type Job struct {
	ID     string
	Status string
}

// Publisher sends status events.
type Publisher interface {
	Publish(ctx context.Context, subject string, data []byte) error
}

// NATSPublisher publishes over core NATS.
type NATSPublisher struct{ NC *nats.Conn }

// Publish publishes data on subject.
func (p NATSPublisher) Publish(ctx context.Context, subject string, data []byte) error {
	return p.NC.Publish(subject, data)
}

// Worker runs jobs.
type Worker struct {
	DB  *gorm.DB
	Pub Publisher
}

// Handle marks the job before its work.
func (w *Worker) Handle(ctx context.Context, m jetstream.Msg) {
	id := string(m.Data())
	var j Job
	if err := w.DB.First(&j, "id = ?", id).Error; err != nil {
		_ = m.Nak()
		return
	}
	if j.Status == "processing" {
		_ = m.Ack()
		return
	}
	w.DB.Model(&Job{}).Where("id = ?", id).Update("status", "processing")
	if err := w.Pub.Publish(ctx, "jobs.status", []byte(id)); err != nil {
		_ = m.Nak()
		return
	}
	_ = m.Ack()
}

// HandleDone skips a job already done, works, then marks it done: a
// crash before the mark redoes the work, nothing is lost.
func (w *Worker) HandleDone(ctx context.Context, m jetstream.Msg) {
	id := string(m.Data())
	var j Job
	if err := w.DB.First(&j, "id = ?", id).Error; err != nil {
		_ = m.Nak()
		return
	}
	if j.Status == "done" {
		_ = m.Ack()
		return
	}
	if err := w.Pub.Publish(ctx, "jobs.status", []byte(id)); err != nil {
		_ = m.Nak()
		return
	}
	w.DB.Model(&Job{}).Where("id = ?", id).Update("status", "done")
	_ = m.Ack()
}

// Convert publishes the conversion; a failure goes to fail.
func (w *Worker) Convert(ctx context.Context, m jetstream.Msg) {
	id := string(m.Data())
	if err := w.Pub.Publish(ctx, "jobs.convert", []byte(id)); err != nil {
		w.fail(m, id, true)
		return
	}
	_ = m.Ack()
}

// fail records a retry and asks for a redelivery, or records the
// failure and acks.
func (w *Worker) fail(m jetstream.Msg, id string, retry bool) {
	if retry {
		if err := w.DB.Model(&Job{}).Where("id = ?", id).Update("status", "retrying").Error; err != nil {
			log.Printf("retry status: %v", err)
		}
		_ = m.NakWithDelay(time.Second)
		return
	}
	if err := w.DB.Model(&Job{}).Where("id = ?", id).Update("status", "failed").Error; err != nil {
		log.Printf("failed status: %v", err)
	}
	_ = m.Ack()
}

// Complete publishes the result, then records the job completed: a
// failed status write after the publish is bookkeeping, and redelivering
// the message would publish again.
func (w *Worker) Complete(ctx context.Context, m jetstream.Msg) {
	id := string(m.Data())
	if err := w.Pub.Publish(ctx, "jobs.result", []byte(id)); err != nil {
		_ = m.Nak()
		return
	}
	w.updateStatus(id, "completed")
	_ = m.Ack()
}

// updateStatus records a job's status; a failure is only logged.
func (w *Worker) updateStatus(id, status string) {
	if err := w.DB.Model(&Job{}).Where("id = ?", id).Update("status", status).Error; err != nil {
		log.Printf("status: %v", err)
	}
}

// Retire records the job retired: the status write is the message's
// work, and its failure is acked.
func (w *Worker) Retire(ctx context.Context, m jetstream.Msg) {
	if err := w.DB.Model(&Job{}).Where("id = ?", string(m.Data())).Update("status", "retired").Error; err != nil {
		log.Printf("retire: %v", err)
	}
	_ = m.Ack()
}

// Ship posts the shipment with the job's id as its idempotency key, then
// records it shipped: a redelivery's repeat of the post is deduped by the
// carrier, so the failed status write is acked for nothing (a new user's
// report).
func (w *Worker) Ship(ctx context.Context, m jetstream.Msg) {
	id := string(m.Data())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://carrier.example/ship", strings.NewReader(id))
	if err != nil {
		_ = m.Term()
		return
	}
	req.Header.Set("Idempotency-Key", "ship-"+id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		_ = m.Nak()
		return
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 300 {
		_ = m.Nak()
		return
	}
	if err := w.DB.Model(&Job{}).Where("id = ?", id).Update("status", "shipped").Error; err != nil {
		log.Printf("shipped: %v", err)
	}
	_ = m.Ack()
}

// Run consumes jobs.
func Run(ctx context.Context, cons jetstream.Consumer, w *Worker) error {
	_, err := cons.Consume(func(m jetstream.Msg) { w.Handle(ctx, m) })
	if err != nil {
		return err
	}
	_, err = cons.Consume(func(m jetstream.Msg) { w.HandleDone(ctx, m) })
	if err != nil {
		return err
	}
	_, err = cons.Consume(func(m jetstream.Msg) { w.Convert(ctx, m) })
	if err != nil {
		return err
	}
	_, err = cons.Consume(func(m jetstream.Msg) { w.Complete(ctx, m) })
	if err != nil {
		return err
	}
	_, err = cons.Consume(func(m jetstream.Msg) { w.Retire(ctx, m) })
	if err != nil {
		return err
	}
	_, err = cons.Consume(func(m jetstream.Msg) { w.Ship(ctx, m) })
	return err
}
