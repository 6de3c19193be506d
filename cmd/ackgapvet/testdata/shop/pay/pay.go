// Package pay is a payment client in a package of its own: its effect
// reaches the consumer in package shop through a fact.
package pay

import (
	"context"
	"net/http"
)

// Charge posts a charge with an idempotency key.
func Charge(ctx context.Context, client *http.Client, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://pay.example/charges", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", id)
	_, err = client.Do(req)
	return err
}
