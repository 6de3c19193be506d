// Package stripe is a stub of stripe-go's root package.
package stripe

import "net/http"

type ChargeParams struct {
	Amount         *int64
	IdempotencyKey *string
}
type Charge struct{ ID string }

// Call is what every resource call does inside: an HTTP request, never
// reported on its own.
func Call(client *http.Client) error {
	_, err := client.Post("https://api.stripe.com", "application/x-www-form-urlencoded", nil)
	return err
}
