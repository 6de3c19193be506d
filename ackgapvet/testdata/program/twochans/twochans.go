// Package twochans has two channels of one element type in two struct
// fields: the handler sends on audit only, so the worker that receives from
// payouts (and posts) is not on its path.
package twochans

import (
	"net/http"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

type T struct {
	audit   chan *message.Message
	payouts chan *message.Message
}

func New() *T {
	return &T{audit: make(chan *message.Message, 1), payouts: make(chan *message.Message, 1)}
}

// Audit is the handler: it hands the message to the audit log and waits.
func (t *T) Audit(msg *message.Message) error {
	t.audit <- msg
	return nil
}

// Log drains the audit channel: nothing outside.
func (t *T) Log() {
	for m := range t.audit {
		_ = m
	}
}

// Pay drains the payouts channel, fed by something else, and posts.
func (t *T) Pay() {
	c := &http.Client{Timeout: 5 * time.Second}
	for m := range t.payouts {
		_, _ = c.Post("http://payouts.local", "text/plain", strings.NewReader(string(m.Payload)))
	}
}
