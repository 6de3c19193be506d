// Package visibilitywait has SQS receive loops whose work can wait without
// bound while nothing extends the message's visibility timeout (field
// trial, wave 51: hls-pipeline's ffmpeg; wave 50: cm_enrich's http.Client
// without Timeout).
package visibilitywait

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func transcode(ctx context.Context, c *sqs.Client) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if err := exec.CommandContext(ctx, "ffmpeg", "-i", *m.Body).Run(); err != nil { // want `medium: exec.CommandContext runs an external command with no deadline on the consumer path of SQS receive loop transcode, and nothing in the package extends the message's visibility timeout`
				continue
			}
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: m.ReceiptHandle})
		}
	}
}

func enrich(ctx context.Context, c *sqs.Client) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			resp, err := (&http.Client{}).Post("https://geo.example/lookup", "text/plain", strings.NewReader(*m.Body)) // want `medium: an http.Client without Timeout .* on the consumer path of SQS receive loop enrich`
			if err != nil {
				continue
			}
			resp.Body.Close()
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// bounded gives the command a deadline under the visibility timeout.
func bounded(ctx context.Context, c *sqs.Client) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			run(ctx, c, m)
		}
	}
}

func run(ctx context.Context, c *sqs.Client, m sqs.Message) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := exec.CommandContext(ctx, "ffmpeg", "-i", *m.Body).Run(); err != nil {
		return
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if resp, err := client.Post("https://geo.example/done", "text/plain", nil); err == nil {
		resp.Body.Close()
	}
	_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: m.ReceiptHandle})
}
