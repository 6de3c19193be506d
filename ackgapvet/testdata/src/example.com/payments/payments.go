// Package payments is a client in another package: its effect reaches
// consumers through a fact.
package payments

import (
	"context"
	"net/http"
)

type Client struct {
	HTTP *http.Client
	URL  string
}

// Charge posts a charge without an idempotency key: a redelivery charges
// again. (With an Idempotency-Key header the call is not an effect.)
func (c *Client) Charge(ctx context.Context, order string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, nil)
	if err != nil {
		return err
	}
	_, err = c.HTTP.Do(req)
	return err
}

// Amount does nothing that matters.
func Amount(order string) int { return len(order) }
