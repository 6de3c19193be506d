package transition

import (
	"context"
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

var t = &ackgap.Transition{Table: "payments", Key: "1", From: []string{"pending"}, To: "charged"}

func register(r *router.Router[*sql.Tx]) {
	_ = r.AddHandler("charge", "orders", nil, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		pending, err := ackgap.ApplyTransition(ctx, t) // clean: an unread refusal fails the commit
		if err != nil {
			return err
		}
		_, err = pending.Result(ctx) // want `medium: the result of ackgap.PendingTransition.Result is ignored: reading it makes a refusal the handler's decision`
		if err != nil {
			return err
		}
		pending.Result(ctx)             // want `the result of ackgap.PendingTransition.Result is ignored`
		res, err := pending.Result(ctx) // clean
		if err != nil {
			return err
		}
		return res.Err()
	})
	_ = r.AddHandler("ship", "orders", nil, ship)
	_ = r.AddHandler("notify", "orders", nil, router.JSON(func(ctx context.Context, tx *sql.Tx, msg *message.Message, v struct{ ID string }) error {
		p, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{Table: "orders", Key: v.ID, From: []string{"paid"}, To: "notified"})
		if err != nil {
			return err
		}
		_, err = p.Result(ctx) // want `the result of ackgap.PendingTransition.Result is ignored`
		return err
	}))
}

// ship applies a transition and writes its outbox row without reading the
// outcome: clean.
func ship(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
	_, err := ackgap.ApplyTransition(ctx, t, &ackgap.OutboxEntry{Kind: "ship", IdempotencyKey: "ship:" + msg.UUID})
	return err
}

// batched reads the outcome in a batch handler and drops it.
func batched() batch.Config[*sql.Tx] {
	return batch.Config[*sql.Tx]{
		Consumer: "billing",
		BatchHandler: func(ctx context.Context, tx *sql.Tx, msgs []*message.Message) error {
			for range msgs {
				p, err := ackgap.ApplyTransition(ctx, t)
				if err != nil {
					return err
				}
				if _, err := p.Result(ctx); err != nil { // want `the result of ackgap.PendingTransition.Result is ignored`
					return err
				}
			}
			return nil
		},
	}
}

// direct calls the store contract from a handler and drops the outcome.
func direct(s stores.Store[*sql.Tx]) router.HandlerFunc[*sql.Tx] {
	return func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		_, err := s.TransitionIfStateTx(ctx, tx, t) // want `the result of stores.Store.TransitionIfStateTx is ignored`
		return err
	}
}

// setup is no handler and holds no transaction: a test may drop the result on
// purpose, clean.
func setup(ctx context.Context, p *ackgap.PendingTransition) error {
	_, err := p.Result(ctx)
	return err
}
