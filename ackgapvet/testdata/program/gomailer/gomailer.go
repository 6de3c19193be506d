// Package gomailer mails a welcome per Watermill message with go-mail:
// only DialAndSend mails; the Msg's From and To build it (field trial,
// wave 40: openuem-worker's notifications).
package gomailer

import (
	"github.com/ThreeDotsLabs/watermill/message"
	mail "github.com/wneessen/go-mail"
)

// M mails through a client.
type M struct{ C *mail.Client }

// Welcome mails the address in the payload.
func (w *M) Welcome(msg *message.Message) error {
	m := mail.NewMsg()
	if err := m.From("hello@example.com"); err != nil {
		return err
	}
	if err := m.To(string(msg.Payload)); err != nil {
		return err
	}
	m.SetBodyString("text/plain", "welcome")
	return w.C.DialAndSend(m)
}

// Register adds the handler.
func Register(r *message.Router, sub message.Subscriber, w *M) {
	r.AddNoPublisherHandler("welcome", "signups", sub, w.Welcome)
}
