// Package stubsend mails a verification per Watermill message through a
// sender whose body was stubbed out with a return above it (field trial,
// wave 48: galaxy_service's GmailSender): the mail below the return never
// goes out, so nothing repeats. The twin sender mails.
package stubsend

import (
	"github.com/ThreeDotsLabs/watermill/message"
	mail "github.com/wneessen/go-mail"
)

// Sender mails through a client.
type Sender struct{ C *mail.Client }

// Verify is stubbed: it returns before the mail.
func (s *Sender) Verify(to string) error {
	return nil
	m := mail.NewMsg()
	if err := m.To(to); err != nil {
		return err
	}
	return s.C.DialAndSend(m)
}

// Welcome mails.
func (s *Sender) Welcome(to string) error {
	m := mail.NewMsg()
	if err := m.To(to); err != nil {
		return err
	}
	return s.C.DialAndSend(m)
}

// Register adds the handlers.
func Register(r *message.Router, sub message.Subscriber, s *Sender) {
	r.AddNoPublisherHandler("verify", "signups", sub, func(msg *message.Message) error { return s.Verify(string(msg.Payload)) })
	r.AddNoPublisherHandler("welcome", "signups", sub, func(msg *message.Message) error { return s.Welcome(string(msg.Payload)) })
}
