// Package sql is a stub of watermill-sql: a publisher that inserts messages
// in the caller's transaction (an outbox).
package sql

import (
	stdsql "database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
)

type Publisher struct{}

func NewPublisher(tx *stdsql.Tx) (*Publisher, error) { return &Publisher{}, nil }

func (p *Publisher) Publish(topic string, msgs ...*message.Message) error { return nil }
