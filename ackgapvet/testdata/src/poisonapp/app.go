// Package poisonapp registers handlers on routers made by poisonmaker.
package poisonapp

import (
	"poisonmaker"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

func handle(msg *message.Message) error { return nil }

func run(sub message.Subscriber) error {
	router, err := poisonmaker.NewRouter() // want `medium: this Watermill router \(made by NewRouter, which adds no poison queue\) has no poison queue`
	if err != nil {
		return err
	}
	router.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

func safe(sub message.Subscriber, pub message.Publisher) error {
	router, err := poisonmaker.NewSafeRouter(pub)
	if err != nil {
		return err
	}
	router.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

func poisonHere(sub message.Subscriber, pub message.Publisher) error {
	router, err := poisonmaker.NewRouter()
	if err != nil {
		return err
	}
	pq, err := middleware.PoisonQueue(pub, "poison")
	if err != nil {
		return err
	}
	router.AddMiddleware(pq)
	router.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

func poisonAfterMakersRetry(sub message.Subscriber, pub message.Publisher) error {
	router := poisonmaker.NewRetryRouter()
	pq, err := middleware.PoisonQueue(pub, "poison")
	if err != nil {
		return err
	}
	router.AddMiddleware(pq) // want `medium: PoisonQueue is added after Retry`
	router.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

func throughWrapper(sub message.Subscriber) error {
	router, err := poisonmaker.Wrapped() // want `medium: this Watermill router \(made by Wrapped`
	if err != nil {
		return err
	}
	router.AddNoPublisherHandler("h", "t", sub, handle)
	return nil
}

func inverted(sub message.Subscriber, pub message.Publisher) {
	router := poisonmaker.NewInvertedRouter(pub) // want `medium: PoisonQueue is added after Retry`
	router.AddNoPublisherHandler("h", "t", sub, handle)
}
