// Package mon stubs go-zero's MongoDB client.
package mon

import "context"

// Collection is go-zero's wrapped MongoDB collection.
type Collection interface {
	InsertOne(ctx context.Context, document any, opts ...any) (any, error)
	UpdateOne(ctx context.Context, filter, update any, opts ...any) (any, error)
	FindOne(ctx context.Context, filter any, opts ...any) any
}

// Model is a collection with a circuit breaker.
type Model struct {
	Collection
}

// MustNewModel returns a model of the collection.
func MustNewModel(uri, db, collection string) *Model { return &Model{} }
