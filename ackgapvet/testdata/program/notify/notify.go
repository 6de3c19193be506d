// Package notify is an adapter reached only through an interface.
package notify

import (
	"context"
	"net/http"
	"time"
)

// Notifier sends a message to a person.
type Notifier interface {
	Notify(ctx context.Context, id string) error
}

// Email is the Notifier the program wires in.
type Email struct{ Client *http.Client }

// Notify posts to the mail service.
func (e Email) Notify(ctx context.Context, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://mail.example/send?id="+id, nil)
	if err != nil {
		return err
	}
	_, err = e.Client.Do(req)
	return err
}

// New returns the email notifier behind the interface.
func New() Notifier { return Email{Client: &http.Client{Timeout: 5 * time.Second}} }

// Hook is a function field: the service calls whatever is stored in it.
type Hook struct {
	Send func(ctx context.Context, id string) error
}

// NewHook stores a webhook sender in the field.
func NewHook(c *http.Client) Hook {
	return Hook{Send: func(ctx context.Context, id string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://hooks.example/"+id, nil)
		if err != nil {
			return err
		}
		_, err = c.Do(req)
		return err
	}}
}
