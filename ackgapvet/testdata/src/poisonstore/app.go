// Package poisonstore keeps the router made by a constructor in its App
// and runs it later; nothing in the package adds a middleware to it.
package poisonstore

import (
	"context"
	"poisonmaker"

	"github.com/ThreeDotsLabs/watermill/message"
)

// App runs the event router.
type App struct {
	router *message.Router
}

func handle(msg *message.Message) error { return nil }

// New registers the handlers and keeps the router.
func New(sub message.Subscriber) (*App, error) {
	router, err := poisonmaker.NewRouter() // want `medium: this Watermill router \(made by NewRouter, which adds no poison queue\) has no poison queue`
	if err != nil {
		return nil, err
	}
	router.AddNoPublisherHandler("h", "t", sub, handle)
	return &App{router: router}, nil
}

// Run runs the router.
func (a *App) Run(ctx context.Context) error { return a.router.Run(ctx) }
