// Package gen stubs gorm.io/gen's DO, which generated query types embed.
package gen

import "context"

// DO runs a generated query.
type DO struct{}

// WithContext returns a DO bound to ctx.
func (d DO) WithContext(ctx context.Context) *DO { return &d }

// Clauses adds clauses (an ON CONFLICT).
func (d DO) Clauses(conds ...any) *DO { return &d }

// Create inserts values.
func (d DO) Create(value any) error { return nil }

// Save inserts or updates value.
func (d DO) Save(value any) error { return nil }
