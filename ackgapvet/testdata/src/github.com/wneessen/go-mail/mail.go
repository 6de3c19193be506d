// Package mail is a stub of github.com/wneessen/go-mail: only the names
// the checker reads.
package mail

// Msg is a mail message being built.
type Msg struct{}

// NewMsg makes a message.
func NewMsg() *Msg { return &Msg{} }

// From sets the sender.
func (m *Msg) From(addr string) error { return nil }

// To sets the recipients.
func (m *Msg) To(addrs ...string) error { return nil }

// SetBodyString sets the body.
func (m *Msg) SetBodyString(contentType, body string) {}

// Client sends messages.
type Client struct{}

// DialAndSend sends msgs.
func (c *Client) DialAndSend(msgs ...*Msg) error { return nil }
