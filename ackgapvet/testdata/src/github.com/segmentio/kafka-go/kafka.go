// Package kafka is a stub of segmentio/kafka-go.
package kafka

import "context"

type Message struct{ Value []byte }

type ReaderConfig struct {
	Brokers []string
	GroupID string
	Topic   string
}

type Reader struct{}

func NewReader(c ReaderConfig) *Reader                                      { return &Reader{} }
func (r *Reader) ReadMessage(ctx context.Context) (Message, error)          { return Message{}, nil }
func (r *Reader) FetchMessage(ctx context.Context) (Message, error)         { return Message{}, nil }
func (r *Reader) CommitMessages(ctx context.Context, msgs ...Message) error { return nil }

type Writer struct{}

func (w *Writer) WriteMessages(ctx context.Context, msgs ...Message) error { return nil }
