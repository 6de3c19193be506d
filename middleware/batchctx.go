package middleware

import (
	"context"
	"errors"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/inboxctx"
	"github.com/ackgap/ackgap/stores"
)

// errBatchTransition: ApplyTransition in a batch handler, which has no
// single message whose event the transition's rows would record.
var errBatchTransition = errors.New("ackgap: ApplyTransition needs one message: call it from a per-message Handler, or write the batch's changes in its own statements")

// batchTx binds a batch's transaction to its store and consumer for the
// batch handler: ackgap.AddOutboxMany writes through it in one statement.
type batchTx[TTx any] struct {
	store    stores.Store[TTx]
	tx       TTx
	consumer string
	hold     *OutboxHold
}

// WithBatchTx returns a copy of ctx in which tx is a batch's transaction,
// for its batch handler: ackgap.AddOutboxMany (and AddOutbox, a row at a
// time) then write through store in tx, recording consumer on rows that
// leave Consumer empty; rows are held for direct dispatch in hold (nil:
// none are). ackgap.ApplyTransition returns an error there: it records one
// message's event. It is for package batch.
func WithBatchTx[TTx any](ctx context.Context, store stores.Store[TTx], tx TTx, consumer string, hold *OutboxHold) context.Context {
	return inboxctx.WithOps(ctx, &batchTx[TTx]{store: store, tx: tx, consumer: consumer, hold: hold})
}

// AddOutbox implements ackgap.AddOutbox in a batch handler.
func (b *batchTx[TTx]) AddOutbox(ctx context.Context, e *ackgap.OutboxEntry) error {
	if e == nil {
		return validateRow(nil)
	}
	return b.AddOutboxMany(ctx, []ackgap.OutboxEntry{*e})
}

// AddOutboxMany implements ackgap.AddOutboxMany in a batch handler: every
// row validated first, then one InsertOutboxManyTx.
func (b *batchTx[TTx]) AddOutboxMany(ctx context.Context, rows []ackgap.OutboxEntry) error {
	if len(rows) == 0 {
		return nil
	}
	filled := make([]ackgap.OutboxEntry, len(rows))
	for i := range rows {
		if err := validateRow(&rows[i]); err != nil {
			return err
		}
		filled[i] = rows[i]
		if filled[i].Consumer == "" {
			filled[i].Consumer = b.consumer
		}
	}
	mark := b.hold.Mark()
	for i := range filled {
		b.hold.hold(&filled[i], nil)
	}
	if _, err := b.store.InsertOutboxManyTx(ctx, b.tx, &stores.OutboxInsertManyParams{Rows: filled}); err != nil {
		b.hold.RollbackTo(mark)
		return err
	}
	return nil
}

// ApplyTransition implements ackgap.ApplyTransition in a batch handler:
// an error.
func (b *batchTx[TTx]) ApplyTransition(context.Context, *ackgap.Transition, []*ackgap.OutboxEntry) (func(context.Context) (*ackgap.TransitionResult, error), error) {
	return nil, errBatchTransition
}
