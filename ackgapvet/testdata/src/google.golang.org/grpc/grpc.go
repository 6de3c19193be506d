// Package grpc is a stub of grpc-go.
package grpc

import "context"

type CallOption interface{}

// ClientConnInterface is what generated clients call.
type ClientConnInterface interface {
	Invoke(ctx context.Context, method string, args any, reply any, opts ...CallOption) error
}
