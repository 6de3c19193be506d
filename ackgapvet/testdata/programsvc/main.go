// Command ordersvc is a service whose module path names no host, over the
// repository's shared receive loop (../programqueue, replaced by a
// relative path): its handler is a consumer.
package main

import (
	"context"
	"net/http"
	"strings"

	"github.com/acme/shop/queue"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func main() {
	c := &queue.Consumer{Client: &sqs.Client{}, URL: "orders"}
	c.StartPolling(context.Background(), func(ctx context.Context, body string) error {
		_, err := http.Post("https://payments.example/charges", "application/json", strings.NewReader(body))
		return err
	})
}
