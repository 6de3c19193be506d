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

func registerDigest(r *message.Router, d *digest) {
	r.AddNoPublisherHandler("digest", "members", nil, d.handle)
	r.AddNoPublisherHandler("timeout", "members", nil, d.timeout)
}
