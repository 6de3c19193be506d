// Package mongo is a stub of the MongoDB driver.
package mongo

import "context"

type InsertOneResult struct{ InsertedID any }

type Collection struct{}

func (c *Collection) InsertOne(ctx context.Context, doc any) (*InsertOneResult, error) {
	return &InsertOneResult{}, nil
}
