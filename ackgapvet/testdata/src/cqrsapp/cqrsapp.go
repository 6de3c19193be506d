package cqrsapp

import (
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/components/cqrs"
	"github.com/ThreeDotsLabs/watermill/message"

	"example.com/payments"
)

type OrderPlaced struct{ ID string }
type ChargeCard struct{ ID string }
type OrderShipped struct{ ID string }

// emailOnOrderPlaced is registered with EventProcessor.AddHandlers: its
// Handle method is an entry point.
type emailOnOrderPlaced struct{ pub message.Publisher }

func (h *emailOnOrderPlaced) HandlerName() string { return "email_on_order_placed" }
func (h *emailOnOrderPlaced) NewEvent() any       { return &OrderPlaced{} }
func (h *emailOnOrderPlaced) Handle(ctx context.Context, event any) error {
	return h.pub.Publish("emails", &message.Message{}) // want `high: a publish \(message.Publisher.Publish\) on the consumer path of Watermill CQRS handler emailOnOrderPlaced.Handle repeats`
}

// draft has the same shape but is registered nowhere: clean.
type draft struct{ pub message.Publisher }

func (h *draft) Handle(ctx context.Context, event any) error {
	return h.pub.Publish("emails", &message.Message{})
}

type chargeHandler struct{ pay *payments.Client }

func (h chargeHandler) Handle(ctx context.Context, cmd *ChargeCard) error {
	return h.pay.Charge(ctx, cmd.ID) // want `critical: the call of payments.Client.Charge, which makes an HTTP request \(http.Client.Do\), on the consumer path of Watermill CQRS handler chargeHandler.Handle repeats`
}

func onShipped(ctx context.Context, e *OrderShipped) error {
	_, err := http.Post("http://shipping.local/notify", "application/json", nil) // want `high: an HTTP request \(http.Post\) on the consumer path of Watermill CQRS handler onShipped repeats`
	return err
}

func setup(ep *cqrs.EventProcessor, cp *cqrs.CommandProcessor, gp *cqrs.EventGroupProcessor, pay *payments.Client, pub message.Publisher, client *http.Client) error {
	if err := ep.AddHandlers(
		&emailOnOrderPlaced{pub: pub},
		cqrs.NewEventHandler("audit", func(ctx context.Context, e *OrderPlaced) error {
			_, err := client.Post("http://audit.local/"+e.ID, "text/plain", nil) // want `medium: an HTTP request \(http.Client.Post\) on the consumer path of Watermill CQRS handler \(func literal\) repeats`
			return err
		}),
	); err != nil {
		return err
	}
	if err := cp.AddHandlers(cqrs.NewCommandHandler("charge", chargeHandler{pay: pay}.Handle)); err != nil {
		return err
	}
	return gp.AddHandlersGroup("shipping", cqrs.NewGroupEventHandler(onShipped))
}
