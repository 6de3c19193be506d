// Package deletefirst is an SQS receive loop whose workers run each
// message as a job through an interface; the job deletes its message
// first, then acts. A redelivery cannot repeat the action (the message is
// gone); a crash between the delete and the action loses it.
package deletefirst

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Job is run by a worker.
type Job interface{ Execute() error }

type job struct {
	ctx context.Context
	c   *sqs.Client
	url string
	m   sqs.Message
	h   *http.Client
}

// Execute deletes the message, then posts the action.
func (j *job) Execute() error {
	if _, err := j.c.DeleteMessage(j.ctx, &sqs.DeleteMessageInput{QueueUrl: &j.url, ReceiptHandle: j.m.ReceiptHandle}); err != nil {
		return err
	}
	_, err := j.h.Post("https://actions.example.com/run", "application/json", strings.NewReader(*j.m.Body))
	return err
}

// RunActions receives and submits each message to the pool.
func RunActions(ctx context.Context, c *sqs.Client, url string, h *http.Client) {
	jobs := make(chan Job)
	for range 4 {
		go func() {
			for j := range jobs { // VTA alone loses the job's type here
				_ = j.Execute()
			}
		}()
	}
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			jobs <- &job{ctx: ctx, c: c, url: url, m: m, h: h}
		}
	}
}
