// Package sendgrid is a stub of sendgrid-go.
package sendgrid

type Response struct{ StatusCode int }
type Email struct{ To, Subject string }

type Client struct{}

func NewSendClient(key string) *Client               { return &Client{} }
func (c *Client) Send(e *Email) (*Response, error)   { return nil, nil }
func (c *Client) NewEmail(to, subject string) *Email { return &Email{To: to, Subject: subject} }
