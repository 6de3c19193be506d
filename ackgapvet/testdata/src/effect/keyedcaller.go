package effect

import (
	"bytes"
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

// psp is a payment provider's client whose post sets the Idempotency-Key
// and hands the request to a traced helper that calls do (field trial,
// wave 44: payment-orchestration's simclient): every request do sends is
// keyed or a GET, so do's call is no effect.
type psp struct {
	client *http.Client
	base   string
}

func (p *psp) charge(ctx context.Context, key string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/charges", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", key)
	return p.traced(ctx, req)
}

func (p *psp) status(ctx context.Context, key string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/charges/"+key, nil)
	if err != nil {
		return err
	}
	return p.traced(ctx, req)
}

func (p *psp) traced(ctx context.Context, req *http.Request) error {
	return p.do(req.WithContext(ctx))
}

func (p *psp) do(req *http.Request) error {
	_, err := p.client.Do(req)
	return err
}

func (p *psp) handle(msg *message.Message) error {
	if err := p.status(msg.Context(), msg.UUID); err != nil {
		return err
	}
	return p.charge(msg.Context(), msg.UUID, msg.Payload)
}

// mailer's send helper is given a request its notify caller makes without
// a key: its Do is an effect.
type mailer struct{ client *http.Client }

func (m *mailer) notify(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://mail.example/send", bytes.NewReader(body))
	if err != nil {
		return err
	}
	return m.send(req)
}

func (m *mailer) send(req *http.Request) error {
	_, err := m.client.Do(req) // want `an HTTP request \(http.Client.Do\)`
	return err
}

func (m *mailer) handle(msg *message.Message) error {
	return m.notify(msg.Context(), msg.Payload)
}

func registerPayments(r *message.Router, p *psp, m *mailer) {
	r.AddNoPublisherHandler("charges", "t", nil, p.handle)
	r.AddNoPublisherHandler("mails", "t", nil, m.handle)
}
