// Package transcode has the shapes of a video transcoding service (field
// trial, wave 50: video_transcoding): an SQS loop that moves a job out of
// "uploading" before it publishes it, and a RabbitMQ worker whose status
// saves drop their errors before the ack.
package transcode

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	amqp "github.com/rabbitmq/amqp091-go"
	"gorm.io/gorm"
)

// Job is a transcoding job.
type Job struct {
	ID       string
	InputURL string
	Status   string
}

// Queue publishes jobs to the workers.
type Queue interface {
	PublishJob(ctx context.Context, id string) error
}

// Rabbit publishes jobs on RabbitMQ.
type Rabbit struct{ Ch *amqp.Channel }

// PublishJob publishes the job's id to the transcode queue.
func (r Rabbit) PublishJob(ctx context.Context, id string) error {
	return r.Ch.PublishWithContext(ctx, "", "transcode", false, false, amqp.Publishing{Body: []byte(id)})
}

// Uploads receives S3 upload events.
type Uploads struct {
	SQS   *sqs.Client
	URL   *string
	DB    *gorm.DB
	Queue Queue
}

// Run receives upload events and handles each.
func (u *Uploads) Run(ctx context.Context) {
	for {
		out, err := u.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: u.URL})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			u.handle(ctx, m)
		}
	}
}

// handle moves the job to "pending", then publishes it: when the publish
// fails the message is left for redelivery, and the redelivery finds
// "pending" and stops at the guard, so the job is never published.
func (u *Uploads) handle(ctx context.Context, m sqs.Message) {
	key := *m.Body
	var job Job
	if err := u.DB.First(&job, "input_url = ?", key).Error; err != nil {
		return
	}
	if job.Status != "uploading" {
		return
	}
	job.Status = "pending"
	if err := u.DB.Save(&job).Error; err != nil {
		return
	}
	if err := u.Queue.PublishJob(ctx, job.ID); err != nil {
		log.Printf("publish %s: %v", job.ID, err)
		return
	}
	_, _ = u.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: u.URL, ReceiptHandle: m.ReceiptHandle})
}

// RunAfter receives upload events and handles each with HandleAfter.
func (u *Uploads) RunAfter(ctx context.Context) {
	for {
		out, err := u.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: u.URL})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			u.HandleAfter(ctx, m)
		}
	}
}

// HandleAfter publishes the job first and moves it to "pending" after:
// a redelivery publishes it again, and nothing is lost.
func (u *Uploads) HandleAfter(ctx context.Context, m sqs.Message) {
	key := *m.Body
	var job Job
	if err := u.DB.First(&job, "input_url = ?", key).Error; err != nil {
		return
	}
	if job.Status != "uploading" {
		return
	}
	if err := u.Queue.PublishJob(ctx, job.ID); err != nil {
		return
	}
	job.Status = "pending"
	if err := u.DB.Save(&job).Error; err != nil {
		return
	}
	_, _ = u.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: u.URL, ReceiptHandle: m.ReceiptHandle})
}

// Worker runs published jobs.
type Worker struct {
	DB *gorm.DB
	Ch *amqp.Channel
}

// Run transcodes each job and saves its status, dropping the save's
// error, then acks: a failed save is acked as done.
func (w *Worker) Run(ctx context.Context) error {
	msgs, err := w.Ch.Consume("transcode", "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range msgs {
		var job Job
		if err := w.DB.First(&job, "id = ?", string(d.Body)).Error; err != nil {
			_ = d.Nack(false, true)
			continue
		}
		job.Status = "completed"
		w.DB.Save(&job)
		_ = d.Ack(false)
	}
	return nil
}
