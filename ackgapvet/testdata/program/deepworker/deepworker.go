// Package deepworker hands each message to a pipeline whose collector,
// started by main, reads the channel three calls down: the post there is
// on the handler's path.
package deepworker

import (
	"net/http"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// P is the pipeline.
type P struct{ in chan *message.Message }

// New makes it.
func New() *P { return &P{in: make(chan *message.Message, 1)} }

// Enqueue is the handler: it hands the message on and returns.
func (p *P) Enqueue(msg *message.Message) error {
	p.in <- msg
	return nil
}

// Collect runs the pipeline.
func (p *P) Collect() { p.stage() }

func (p *P) stage() { p.next() }

func (p *P) next() { p.read() }

func (p *P) read() {
	c := &http.Client{Timeout: 5 * time.Second}
	for m := range p.in {
		_, _ = c.Post("http://store.local", "text/plain", strings.NewReader(string(m.Payload)))
	}
}
