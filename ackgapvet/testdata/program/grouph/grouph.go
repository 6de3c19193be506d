// Package grouph wraps Watermill's typed group handlers in a generic
// constructor of its own (wave 16, openmeter's grouphandler): the typed
// closures its callers pass are the consumers.
package grouph

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/components/cqrs"
)

// On makes a group event handler of f.
func On[T any](f func(context.Context, *T) error) cqrs.GroupEventHandler {
	return cqrs.NewGroupEventHandler(f)
}
