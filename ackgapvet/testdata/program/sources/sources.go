// Package sources holds two receive loops behind one interface, wired the
// way a stream replicator wires them: the kafka-go loop falls back to
// another source, and the SQS loop hands each message on with an ack
// closure that the target calls. The call graph reaches the SQS loop from
// the kafka-go loop; it is still a consumer of its own.
package sources

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/segmentio/kafka-go"
)

// Message is what a source hands to the target; Ack acknowledges it.
type Message struct {
	Data string
	Ack  func()
}

// Source reads messages into out until ctx ends.
type Source interface {
	Read(ctx context.Context, out chan<- Message)
}

// SQS is an SQS receive loop.
type SQS struct {
	C   *sqs.Client
	URL string
}

// Read receives and hands each message on; the target deletes it.
func (s *SQS) Read(ctx context.Context, out chan<- Message) {
	for ctx.Err() == nil {
		res, err := s.C.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &s.URL})
		if err != nil {
			continue
		}
		for _, m := range res.Messages {
			out <- Message{Data: *m.Body, Ack: s.acker(ctx, m.ReceiptHandle)}
		}
	}
}

func (s *SQS) acker(ctx context.Context, h *string) func() {
	return func() { _, _ = s.C.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &s.URL, ReceiptHandle: h}) }
}

// Kafka is a kafka-go loop that falls back to Next when the reader fails.
type Kafka struct {
	R    *kafka.Reader
	Next Source
}

// Read fetches and hands each record on with a commit closure.
func (k *Kafka) Read(ctx context.Context, out chan<- Message) {
	for {
		m, err := k.R.FetchMessage(ctx)
		if err != nil {
			k.Next.Read(ctx, out)
			return
		}
		out <- Message{Data: string(m.Value), Ack: func() { _ = k.R.CommitMessages(ctx, m) }}
	}
}
