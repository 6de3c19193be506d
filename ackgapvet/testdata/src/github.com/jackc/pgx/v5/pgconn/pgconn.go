// Package pgconn is a stub of pgx's pgconn.
package pgconn

// CommandTag is a stub.
type CommandTag struct{}
