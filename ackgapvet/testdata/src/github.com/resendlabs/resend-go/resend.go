// Package resend is a stub of Resend's SDK under its former module path.
package resend

// SendEmailRequest is an email to send.
type SendEmailRequest struct{ To []string }

// EmailsSvc sends emails.
type EmailsSvc struct{}

// Send sends one email.
func (s *EmailsSvc) Send(r *SendEmailRequest) (string, error) { return "", nil }

// Client is the API client.
type Client struct{ Emails *EmailsSvc }
