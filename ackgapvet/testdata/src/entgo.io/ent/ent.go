// Package ent is a stub of entgo.io/ent.
package ent

// Mutation is a stub.
type Mutation interface{}
