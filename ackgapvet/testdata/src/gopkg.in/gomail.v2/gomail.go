// Package gomail is a stub of gopkg.in/gomail.v2: only the names the
// checker reads.
package gomail

// Message is an e-mail.
type Message struct{}

// NewMessage makes a message.
func NewMessage() *Message { return &Message{} }

// SetHeader sets a header.
func (m *Message) SetHeader(field string, value ...string) {}

// SendCloser is an open SMTP connection.
type SendCloser interface{ Close() error }

// Dialer dials an SMTP server.
type Dialer struct{}

// NewDialer makes a dialer.
func NewDialer(host string, port int, username, password string) *Dialer { return &Dialer{} }

// Dial opens a connection.
func (d *Dialer) Dial() (SendCloser, error) { return nil, nil }

// DialAndSend opens a connection and sends the messages.
func (d *Dialer) DialAndSend(m ...*Message) error { return nil }
