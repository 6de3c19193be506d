// Package zerogroup is a go-queue kq copied into the module: a fetch loop
// hands messages over a channel to consumers that go-zero's RoutineGroup
// starts (field trial, wave 37: scooter-WSVA's vendored kq).
package zerogroup

import (
	"context"
	"database/sql"
	"log"

	"github.com/segmentio/kafka-go"
	"github.com/zeromicro/go-zero/core/threading"
)

// ConsumeHandler handles one message.
type ConsumeHandler interface {
	Consume(ctx context.Context, key, value string) error
}

// Queue fetches from one consumer group and consumes in a group of
// goroutines.
type Queue struct {
	r         *kafka.Reader
	channel   chan kafka.Message
	handler   ConsumeHandler
	producers *threading.RoutineGroup
	consumers *threading.RoutineGroup
}

// NewQueue returns a queue over the given consumer group.
func NewQueue(group string, h ConsumeHandler) *Queue {
	return &Queue{
		r:         kafka.NewReader(kafka.ReaderConfig{GroupID: group, Topic: "likes"}),
		channel:   make(chan kafka.Message),
		handler:   h,
		producers: threading.NewRoutineGroup(),
		consumers: threading.NewRoutineGroup(),
	}
}

// Start fetches and consumes in eight goroutines until the reader fails.
func (q *Queue) Start(ctx context.Context) {
	for range 8 {
		q.consumers.Run(func() {
			for m := range q.channel {
				if err := q.handler.Consume(ctx, "likes", string(m.Value)); err != nil {
					log.Printf("consume: %v", err)
				}
				_ = q.r.CommitMessages(ctx, m)
			}
		})
	}
	q.producers.Run(func() {
		for {
			m, err := q.r.FetchMessage(ctx)
			if err != nil {
				return
			}
			q.channel <- m
		}
	})
	q.producers.Wait()
	close(q.channel)
	q.consumers.Wait()
}

// Likes counts a video's likes.
type Likes struct{ DB *sql.DB }

// Consume adds one like.
func (l *Likes) Consume(ctx context.Context, key, value string) error {
	_, err := l.DB.ExecContext(ctx, "UPDATE videos SET likes = likes + 1 WHERE id = $1", value)
	return err
}

// Main starts the likes queue.
func Main(ctx context.Context, db *sql.DB) {
	NewQueue("likes", &Likes{DB: db}).Start(ctx)
}
