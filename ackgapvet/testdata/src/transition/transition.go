package transition

import (
	"context"
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

var p = &stores.TransitionParams{Table: "payments", Key: "1", To: "charged"}

func register(r *router.Router[*sql.Tx]) {
	_ = r.AddHandler("charge", "orders", nil, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		_, err := middleware.TransitionIfState(ctx, p) // want `medium: the result of middleware.TransitionIfState is ignored: a transition refused by its guard is not an error`
		if err != nil {
			return err
		}
		middleware.TransitionIfState(ctx, p)             // want `the result of middleware.TransitionIfState is ignored`
		res, err := middleware.TransitionIfState(ctx, p) // clean
		if err != nil {
			return err
		}
		return res.Err()
	})
}

// setup is no handler and holds no transaction: a test may drop the result on
// purpose, clean.
func setup(ctx context.Context) error {
	_, err := middleware.TransitionIfState(ctx, p)
	return err
}
