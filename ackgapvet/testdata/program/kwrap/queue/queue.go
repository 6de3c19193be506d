// Package queue wraps the reader the way many services do: a package of
// its own with a read and a commit function.
package queue

import (
	"context"

	"github.com/segmentio/kafka-go"
)

var reader *kafka.Reader

// Read fetches the next message.
func Read() (kafka.Message, error) { return reader.FetchMessage(context.Background()) }

// Commit commits m.
func Commit(m kafka.Message) error { return reader.CommitMessages(context.Background(), m) }
