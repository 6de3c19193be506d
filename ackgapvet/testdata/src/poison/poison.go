// Package poison: Watermill routers with and without a poison queue.
package poison

import (
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
