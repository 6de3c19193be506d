// Package poisonmaker makes Watermill routers for poisonapp: an
// application's constructor, as the handlers are registered elsewhere.
package poisonmaker

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

// NewRouter adds only a recoverer: a router without a poison queue.
func NewRouter() (*message.Router, error) {
	router, err := message.NewRouter(message.RouterConfig{}, nil)
	if err != nil {
		return nil, err
	}
	router.AddMiddleware(defaultMiddleware()...)
	return router, nil
}

func defaultMiddleware() []message.HandlerMiddleware {
	return []message.HandlerMiddleware{middleware.Recoverer, middleware.CorrelationID}
}

// NewSafeRouter adds a poison queue outermost.
func NewSafeRouter(pub message.Publisher) (*message.Router, error) {
	router, err := message.NewRouter(message.RouterConfig{}, nil)
	if err != nil {
		return nil, err
	}
	pq, err := middleware.PoisonQueue(pub, "poison")
	if err != nil {
		return nil, err
	}
	router.AddMiddleware(pq, middleware.Retry{MaxRetries: 3}.Middleware)
	return router, nil
}

// NewRetryRouter adds Retry only; its callers add the poison queue.
func NewRetryRouter() *message.Router {
	r, _ := message.NewRouter(message.RouterConfig{}, nil)
	r.AddMiddleware(middleware.Retry{MaxRetries: 3}.Middleware)
	return r
}

// wrapped returns a maker's router: a maker too.
func wrapped() (*message.Router, error) {
	r, err := NewRouter()
	return r, err
}

// Wrapped is exported for poisonapp.
func Wrapped() (*message.Router, error) { return wrapped() }

// NewInvertedRouter adds Retry, then the poison queue inside it.
func NewInvertedRouter(pub message.Publisher) *message.Router {
	r, _ := message.NewRouter(message.RouterConfig{}, nil)
	pq, _ := middleware.PoisonQueue(pub, "poison")
	r.AddMiddleware(middleware.Retry{MaxRetries: 3}.Middleware, pq)
	return r
}
