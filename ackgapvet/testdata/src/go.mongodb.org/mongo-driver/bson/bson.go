// Package bson is a stub of the MongoDB driver's bson package.
package bson

// M is an unordered document.
type M map[string]any

// E is one element of a D.
type E struct {
	Key   string
	Value any
}

// D is an ordered document.
type D []E
