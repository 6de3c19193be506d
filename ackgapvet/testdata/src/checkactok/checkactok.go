// Package checkactok uses Watermill's Deduplicator in front of ackgap's
// inbox: not the only guard, clean.
package checkactok

import (
	"database/sql"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ackgap/ackgap/router"
)

func setup(wr *message.Router) (*router.Router[*sql.Tx], error) {
	d := middleware.Deduplicator{Timeout: time.Minute}
	wr.AddMiddleware(d.Middleware)
	return router.New[*sql.Tx](nil, nil)
}
