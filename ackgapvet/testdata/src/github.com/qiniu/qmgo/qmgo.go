// Package qmgo is a stub of qiniu/qmgo for analysistest.
package qmgo

import "context"

type InsertOneResult struct{}
type Collection struct{}

func (c *Collection) InsertOne(ctx context.Context, doc interface{}) (*InsertOneResult, error) {
	return nil, nil
}
func (c *Collection) Find(ctx context.Context, filter interface{}) interface{} { return nil }
