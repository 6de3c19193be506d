// Package inboxctx holds the context keys of the message being handled:
// its transaction and its event id. It sits at the bottom of the import
// graph so that stores and brokers can read them without importing the
// inbox middleware; package ackgap exports the accessors
// (ackgap.TxFromContext, ackgap.EventIDFromContext), and only the inbox
// middleware and package batch set them.
package inboxctx

import "context"

// txKey is the context key of the typed transaction; one key type per
// transaction type, so Tx needs no type assertion by the caller.
type txKey[TTx any] struct{}

// eventIDKey is the context key of the message's event id.
type eventIDKey struct{}

// With returns a copy of ctx carrying tx and eventID.
func With[TTx any](ctx context.Context, tx TTx, eventID string) context.Context {
	ctx = context.WithValue(ctx, txKey[TTx]{}, tx)
	return context.WithValue(ctx, eventIDKey{}, eventID)
}

// Tx returns the transaction With put in ctx, and false when there is
// none of type TTx.
func Tx[TTx any](ctx context.Context) (TTx, bool) {
	tx, ok := ctx.Value(txKey[TTx]{}).(TTx)
	return tx, ok
}

// EventID returns the event id With put in ctx, and false when there is
// none.
func EventID(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(eventIDKey{}).(string)
	return id, ok
}

// opsKey is the context key of the message's transaction bound to its
// store (package ackgap's helpers read it; package middleware sets it).
type opsKey struct{}

// WithOps returns a copy of ctx carrying ops.
func WithOps(ctx context.Context, ops any) context.Context {
	return context.WithValue(ctx, opsKey{}, ops)
}

// Ops returns what WithOps put in ctx, or nil.
func Ops(ctx context.Context) any {
	return ctx.Value(opsKey{})
}
