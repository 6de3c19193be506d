// Package bridge hands each message to a worker that receives it through a
// method (Fetch), not in its own body.
package bridge

import (
	"net/http"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

type B struct {
	fetch chan *message.Message
	done  chan *message.Message
}

func New() *B { return &B{fetch: make(chan *message.Message), done: make(chan *message.Message)} }

// Forward is the handler: it hands the message over and waits for it.
func (b *B) Forward(msg *message.Message) error {
	b.fetch <- msg
	<-b.done
	return nil
}

// Fetch is where the worker receives.
func (b *B) Fetch() *message.Message { return <-b.fetch }

// Run is the worker, started with go by main.
func Run(b *B) {
	c := &http.Client{Timeout: 5 * time.Second}
	for {
		m := b.Fetch()
		_, _ = c.Post("http://nats.local/out", "text/plain", strings.NewReader(string(m.Payload)))
		b.done <- m
	}
}
