// Package shop is a consumer with one finding, for the command's tests.
package shop

import (
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"

	"example.com/shop/pay"
)

func Register(r *message.Router, client *http.Client) {
	r.AddNoPublisherHandler("charge", "orders", nil, func(msg *message.Message) error {
		return pay.Charge(msg.Context(), client, msg.UUID)
	})
}

func refreshCache(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://cache.example/warm", nil)
	if err != nil {
		return err
	}
	//ackgapvet:ignore effect warming the cache twice is harmless
	_, err = client.Do(req)
	return err
}

// Register2 registers a handler that only warms a cache.
func Register2(r *message.Router, client *http.Client) {
	r.AddNoPublisherHandler("warm", "orders", nil, func(msg *message.Message) error {
		return refreshCache(msg.Context(), client)
	})
}
