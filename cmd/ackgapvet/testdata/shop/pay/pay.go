// Package pay is a payment client in a package of its own: its effect
// reaches the consumer in package shop through a fact.
package pay

import (
	"context"
	"net/http"
	"strings"
)

// Charge posts a charge. It sends no idempotency key, so a redelivered
// order is charged again: the effect the command's tests expect. (With
// an Idempotency-Key header derived from the message the call would not
// be reported: the payment provider dedupes it.)
func Charge(ctx context.Context, client *http.Client, id string) error {
	var err error
	_, err = client.Post("https://pay.example/charges", "text/plain", strings.NewReader(id))
	return err
}
