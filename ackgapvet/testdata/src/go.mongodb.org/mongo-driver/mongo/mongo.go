// Package mongo is a stub of the MongoDB driver.
package mongo

import "context"

type InsertOneResult struct{ InsertedID any }

type Collection struct{}

func (c *Collection) InsertOne(ctx context.Context, doc any) (*InsertOneResult, error) {
	return &InsertOneResult{}, nil
}

// UpdateResult says what an update changed.
type UpdateResult struct{ ModifiedCount int64 }

// UpdateOne updates one document.
func (c *Collection) UpdateOne(ctx context.Context, filter, update any) (*UpdateResult, error) {
	return &UpdateResult{}, nil
}
