package batch

import (
	"context"
	"errors"
)

// ErrHeldBack is wrapped by the error of a message that
// [Processor.Process] did not give to the handlers because an earlier
// message of its key in the same batch failed or was rejected: applying
// it would overtake that message. Its outcome is failed and its inbox row
// is not kept; redeliver it after the message that held it back. It is no
// fault of its own: a consumer counting attempts may leave it uncounted.
var ErrHeldBack = errors.New("ackgap batch: held back behind an earlier message of its key that was not applied")

// errTxBroken wraps the error of a savepoint that could not be set, or
// rolled back to: the batch's transaction is unusable and the batch fails.
var errTxBroken = errors.New("ackgap batch: transaction unusable")

// valuesOf is a context cancelled with one context and carrying the
// values of another as well: the handler of a message sees the values of
// the message's own context (a broker's ackgap.Delivery, trace context)
// and ends with the batch.
type valuesOf struct {
	context.Context
	values context.Context
}

func (c valuesOf) Value(key any) any {
	if v := c.values.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

// withValuesOf returns ctx with the values of values added (looked up
// first), or ctx itself when values is ctx or carries nothing of its own.
func withValuesOf(ctx, values context.Context) context.Context {
	if values == ctx || values == context.Background() {
		return ctx
	}
	return valuesOf{Context: ctx, values: values}
}
