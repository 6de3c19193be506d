// Package threading stubs go-zero's goroutine helpers.
package threading

import "context"

// RoutineGroup runs functions in goroutines and waits for them.
type RoutineGroup struct{}

// NewRoutineGroup returns a group.
func NewRoutineGroup() *RoutineGroup { return &RoutineGroup{} }

// Run runs fn in a new goroutine.
func (g *RoutineGroup) Run(fn func()) {}

// RunSafe runs fn in a new goroutine, recovering a panic.
func (g *RoutineGroup) RunSafe(fn func()) {}

// Wait waits for the group's goroutines.
func (g *RoutineGroup) Wait() {}

// GoSafe runs fn in a new goroutine, recovering a panic.
func GoSafe(fn func()) {}

// GoSafeCtx runs fn in a new goroutine, recovering a panic.
func GoSafeCtx(ctx context.Context, fn func()) {}

// RunSafe runs fn in the caller's goroutine, recovering a panic.
func RunSafe(fn func()) {}
