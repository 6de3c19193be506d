// Package queue wraps the reader the way many services do: a package of
// its own with a read and a commit function.
package queue

import (
	"context"

	"github.com/segmentio/kafka-go"
)

var reader *kafka.Reader

// Msg is a fetched message.
type Msg = kafka.Message

// Read fetches the next message.
func Read() (kafka.Message, error) { return reader.FetchMessage(context.Background()) }

// Commit commits m.
func Commit(m kafka.Message) error { return reader.CommitMessages(context.Background(), m) }

// Job is a decoded message.
type Job struct{ ID string }

var last kafka.Message

// ReadJob fetches the next message and decodes it: it returns no client
// type, but it receives.
func ReadJob() (*Job, error) {
	m, err := reader.FetchMessage(context.Background())
	if err != nil {
		return nil, err
	}
	last = m
	return &Job{ID: string(m.Value)}, nil
}

// Done commits the last job's message.
func Done() error { return reader.CommitMessages(context.Background(), last) }
