// Package kafka is a stub of segmentio/kafka-go.
package kafka

import (
	"context"
	"time"
)

type Message struct{ Value []byte }

type ReaderConfig struct {
	Brokers     []string
	GroupID     string
	Topic       string
	Partition   int
	StartOffset int64
}

const (
	LastOffset  int64 = -1
	FirstOffset int64 = -2
)

type Reader struct{}

func NewReader(c ReaderConfig) *Reader                                      { return &Reader{} }
func (r *Reader) ReadMessage(ctx context.Context) (Message, error)          { return Message{}, nil }
func (r *Reader) FetchMessage(ctx context.Context) (Message, error)         { return Message{}, nil }
func (r *Reader) SetOffset(offset int64) error                              { return nil }
func (r *Reader) SetOffsetAt(ctx context.Context, t time.Time) error        { return nil }
func (r *Reader) CommitMessages(ctx context.Context, msgs ...Message) error { return nil }

type Writer struct{}

func (w *Writer) WriteMessages(ctx context.Context, msgs ...Message) error { return nil }
