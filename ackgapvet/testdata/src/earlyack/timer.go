package earlyack

import (
	"context"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Mailer sends e-mail.
type Mailer interface{ Send(to, body string) error }

// digest collects members in memory and mails them when a timer fires:
// the handler has returned and the router acked long before.
type digest struct {
	mu      sync.Mutex
	pending map[string][]string
	mailer  Mailer
}

func (d *digest) handle(msg *message.Message) error {
	d.collect(msg.Metadata["member"], string(msg.Payload))
	return nil
}

func (d *digest) collect(member, project string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending[member]) == 0 {
		time.AfterFunc(10*time.Second, func() { d.fire(member) }) // want `medium: schedules work on a timer \(time.AfterFunc\) on the consumer path of watermill handler handle`
	}
	d.pending[member] = append(d.pending[member], project)
}

func (d *digest) fire(member string) {
	d.mu.Lock()
	projects := d.pending[member]
	delete(d.pending, member)
	d.mu.Unlock()
	_ = d.mailer.Send(member, projects[0])
}

// timeout cancels the handler's context on a timer: not work.
func (d *digest) timeout(msg *message.Message) error {
	ctx, cancel := context.WithCancel(msg.Context())
	t := time.AfterFunc(time.Second, cancel)
	defer t.Stop()
	stop := time.AfterFunc(time.Second, func() { cancel() })
	defer stop.Stop()
	<-ctx.Done()
	return nil
}

// debouncer runs the last function it was given once calls stop for a
// while: the handler buffers, returns, and is acked; the mail goes later.
type debouncer struct {
	mu    sync.Mutex
	timer *time.Timer
}

func (b *debouncer) add(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timer = time.AfterFunc(20*time.Minute, f) // want `schedules work on a timer \(time.AfterFunc\) on the consumer path of watermill handler func literal`
}

func (d *digest) buffered(msg *message.Message, b *debouncer) error {
	d.pending["all"] = append(d.pending["all"], string(msg.Payload))
	b.add(func() { d.fire("all") })
	return nil
}

// expiry hands the timer a cancel function it was given: not work.
func expiry(msg *message.Message, cancelFn func()) error {
	t := time.AfterFunc(time.Second, cancelFn)
	defer t.Stop()
	return nil
}

func registerDigest(r *message.Router, d *digest, b *debouncer) {
	r.AddNoPublisherHandler("digest", "members", nil, d.handle)
	r.AddNoPublisherHandler("timeout", "members", nil, d.timeout)
	r.AddNoPublisherHandler("buffered", "members", nil, func(msg *message.Message) error { return d.buffered(msg, b) })
	r.AddNoPublisherHandler("expiry", "members", nil, func(msg *message.Message) error { return expiry(msg, func() {}) })
}
