// Package ledger is a payment SDK the configuration classifies: its calls
// are effects of class payment.
package ledger

import "context"

// Client books payments.
type Client struct{}

// Book books a payment.
func (c *Client) Book(ctx context.Context, id string) error { return nil }

// GetBalance reads a balance: a read, not an effect.
func (c *Client) GetBalance(ctx context.Context, id string) (int, error) { return 0, nil }
