// Package cqrs is a stub of Watermill's components/cqrs package.
package cqrs

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
)

type EventHandler interface {
	HandlerName() string
	NewEvent() any
	Handle(ctx context.Context, event any) error
}

type CommandHandler interface {
	HandlerName() string
	NewCommand() any
	Handle(ctx context.Context, cmd any) error
}

type GroupEventHandler interface {
	NewEvent() any
	Handle(ctx context.Context, event any) error
}

func NewEventHandler[T any](handlerName string, handleFunc func(ctx context.Context, event *T) error) EventHandler {
	return nil
}

func NewCommandHandler[Command any](handlerName string, handleFunc func(ctx context.Context, cmd *Command) error) CommandHandler {
	return nil
}

func NewGroupEventHandler[T any](handleFunc func(ctx context.Context, event *T) error) GroupEventHandler {
	return nil
}

type EventProcessor struct{}

func (p *EventProcessor) AddHandlers(handlers ...EventHandler) error { return nil }

type CommandProcessor struct{}

func (p *CommandProcessor) AddHandlers(handlers ...CommandHandler) error { return nil }

type EventGroupProcessor struct{}

func (p *EventGroupProcessor) AddHandlersGroup(groupName string, handlers ...GroupEventHandler) error {
	return nil
}

type EventBus struct{}

func (b *EventBus) Publish(ctx context.Context, event any) error { return nil }

func NewEventBus(pub message.Publisher) *EventBus { return &EventBus{} }

// EventProcessorConfig configures an EventProcessor.
type EventProcessorConfig struct{}

// NewEventProcessorWithConfig adds its handlers to router.
func NewEventProcessorWithConfig(router *message.Router, config EventProcessorConfig) (*EventProcessor, error) {
	return &EventProcessor{}, nil
}

// FacadeConfig configures a Facade (the older CQRS API).
type FacadeConfig struct{ Router *message.Router }

// Facade is the older CQRS API.
type Facade struct{}

// NewFacade adds the facade's handlers to config.Router.
func NewFacade(config FacadeConfig) (*Facade, error) { return &Facade{}, nil }
