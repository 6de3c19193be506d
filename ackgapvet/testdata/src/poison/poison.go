// Package poison: Watermill routers with and without a poison queue.
package poison

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/components/cqrs"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

func handle(msg *message.Message) error { return nil }

func noPoison(sub message.Subscriber) error {
	r, err := message.NewRouter(message.RouterConfig{}, nil) // want `medium: this Watermill router has no poison queue`
	if err != nil {
		return err
	}
	r.AddMiddleware(middleware.Retry{MaxRetries: 3}.Middleware)
	r.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

func poisonInsideRetry(sub message.Subscriber, pub message.Publisher) error {
	r, err := message.NewRouter(message.RouterConfig{}, nil)
	if err != nil {
		return err
	}
	pq, err := middleware.PoisonQueue(pub, "poison")
	if err != nil {
		return err
	}
	r.AddMiddleware(middleware.Retry{MaxRetries: 3}.Middleware)
	r.AddMiddleware(pq) // want `medium: PoisonQueue is added after Retry, so it runs inside it`
	r.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

// poisonOutermost is the right order: clean.
func poisonOutermost(sub message.Subscriber, pub message.Publisher) error {
	r, err := message.NewRouter(message.RouterConfig{}, nil)
	if err != nil {
		return err
	}
	pq, err := middleware.PoisonQueueWithFilter(pub, "poison", func(error) bool { return true })
	if err != nil {
		return err
	}
	r.AddMiddleware(pq, middleware.Retry{MaxRetries: 3}.Middleware)
	r.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

// handedOff gives the router to a function that may add middlewares: clean.
func handedOff(sub message.Subscriber) error {
	r, err := message.NewRouter(message.RouterConfig{}, nil)
	if err != nil {
		return err
	}
	configure(r)
	r.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

func configure(r *message.Router) {}

// customDLQ adds a dead-letter middleware of its own: clean.
func customDLQ(sub message.Subscriber) error {
	r, err := message.NewRouter(message.RouterConfig{}, nil)
	if err != nil {
		return err
	}
	r.AddMiddleware(deadLetterMiddleware)
	r.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

func deadLetterMiddleware(h message.HandlerFunc) message.HandlerFunc { return h }

// toCQRS gives the router to Watermill's CQRS processor, which registers
// its handlers and adds no middleware (field trial, wave 30: ucmsv2 H1):
// a permanent failure is nacked and delivered again without end.
func toCQRS(sub message.Subscriber) error {
	r, err := message.NewRouter(message.RouterConfig{}, nil) // want `medium: this Watermill router has no poison queue`
	if err != nil {
		return err
	}
	ep, err := cqrs.NewEventProcessorWithConfig(r, cqrs.EventProcessorConfig{})
	if err != nil {
		return err
	}
	_ = ep.AddHandlers(cqrs.NewEventHandler("mail", func(ctx context.Context, e *struct{}) error { return nil }))
	return r.Run(context.Background())
}

// toFacade gives the router to the older CQRS facade in its config: the
// same (wave 21, ges H1).
func toFacade(sub message.Subscriber) error {
	r, err := message.NewRouter(message.RouterConfig{}, nil) // want `medium: this Watermill router has no poison queue`
	if err != nil {
		return err
	}
	if _, err := cqrs.NewFacade(cqrs.FacadeConfig{Router: r}); err != nil {
		return err
	}
	return r.Run(context.Background())
}
