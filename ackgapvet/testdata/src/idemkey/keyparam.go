package idemkey

import (
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
)

// payer sets the Idempotency-Key header from its parameter; what its
// callers pass decides (a new user's report: a fresh key made one call up),
// and the finding is where the fresh key is made, on that caller's
// consumer path only (a second new user's report: a helper shared with a
// caller that passes the message's id).
type payer struct{ client *http.Client }

func (p *payer) charge(ctx context.Context, key string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://pay.example/charges", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", key)
	_, err = p.client.Do(req)
	return err
}

func (p *payer) refund(ctx context.Context, key string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://pay.example/refunds", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", key) // clean: its only caller passes the message's id
	_, err = p.client.Do(req)
	return err
}

func (p *payer) chargeRandom(msg *message.Message) error {
	return p.charge(msg.Context(), uuid.NewString()) // want `critical: Idempotency-Key is made with uuid.NewString, passed by chargeRandom on the consumer path of watermill handler chargeRandom`
}

func (p *payer) chargeKeyed(msg *message.Message) error {
	return p.charge(msg.Context(), "charge-"+msg.UUID) // clean: the message's id
}

func (p *payer) refundKeyed(msg *message.Message) error {
	return p.refund(msg.Context(), "refund-"+msg.UUID)
}

func registerPayer(r *message.Router, p *payer) {
	r.AddNoPublisherHandler("charge", "orders", nil, p.chargeRandom)
	r.AddNoPublisherHandler("refund", "returns", nil, p.refundKeyed)
	r.AddNoPublisherHandler("charge-keyed", "orders", nil, p.chargeKeyed)
}

// payouts sends a payout with the key its caller passes.
type payouts struct{ client *http.Client }

func (p *payouts) send(ctx context.Context, key string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://pay.example/payouts", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", key)
	_, err = p.client.Do(req)
	return err
}

// payHeld keeps the fresh key in a local variable first (a new user's
// report: a payout's key): reported where the key is passed.
func (p *payouts) payHeld(msg *message.Message) error {
	key := uuid.NewString()
	return p.send(msg.Context(), key) // want `Idempotency-Key is made with uuid.NewString, passed by payHeld on the consumer path of watermill handler payHeld`
}

func registerPayouts(r *message.Router, p *payouts) {
	r.AddNoPublisherHandler("payout", "payouts", nil, p.payHeld)
}
