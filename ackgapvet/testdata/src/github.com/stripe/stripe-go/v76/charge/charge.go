// Package charge is a stub of stripe-go's charge package.
package charge

import (
	"net/http"

	stripe "github.com/stripe/stripe-go/v76"
)

func New(params *stripe.ChargeParams) (*stripe.Charge, error) {
	return &stripe.Charge{}, stripe.Call(http.DefaultClient)
}

func Get(id string, params *stripe.ChargeParams) (*stripe.Charge, error) {
	return &stripe.Charge{}, stripe.Call(http.DefaultClient)
}
