// Package visibilitywaitok extends the visibility timeout while its
// command runs (a heartbeat of ChangeMessageVisibility): nothing is
// reported.
package visibilitywaitok

import (
	"context"
	"os/exec"
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
			done := make(chan struct{})
			go heartbeat(ctx, c, m, done)
			err := exec.CommandContext(ctx, "ffmpeg", "-i", *m.Body).Run()
			close(done)
			if err != nil {
				continue
			}
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: m.ReceiptHandle})
		}
	}
}

func heartbeat(ctx context.Context, c *sqs.Client, m sqs.Message, done <-chan struct{}) {
	t := time.NewTicker(20 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			_, _ = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 60})
		}
	}
}
