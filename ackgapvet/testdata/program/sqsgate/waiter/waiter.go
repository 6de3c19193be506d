// Package waiter holds the loop over sqsgate's one-shot receive, called
// through the interface.
package waiter

import (
	"context"
	"net/http"
	"strings"

	"example.com/program/sqsgate"
)

// Wait is the consumer: it receives through the gateway, posts, deletes.
func Wait(ctx context.Context, g sqsgate.Gateway) {
	for {
		out, err := g.ReceiveMessage(ctx)
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			_, _ = http.Post("https://quotes.example/reply", "text/plain", strings.NewReader(*m.Body))
			_ = g.Delete(ctx, m.ReceiptHandle)
		}
	}
}
