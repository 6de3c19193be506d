// Package grpc is a stub of grpc-go.
package grpc

type CallOption interface{}
