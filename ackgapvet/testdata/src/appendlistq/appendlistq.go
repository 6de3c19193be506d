// Package appendlistq: a Redis list this package also pops from is a queue
// whose consumer is an entry point of its own; pushing to it is no append
// finding.
package appendlistq

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

type Q struct{ rdb *redis.Client }

func (q *Q) register(r *message.Router) {
	r.AddNoPublisherHandler("jobs", "jobs", nil, q.onJob)
}

// onJob hands the job to the list queue.
func (q *Q) onJob(msg *message.Message) error {
	return q.rdb.LPush(context.Background(), "jobs", string(msg.Payload)).Err()
}

// Next takes a job off the list queue.
func (q *Q) Next(ctx context.Context) ([]string, error) {
	return q.rdb.BRPop(ctx, time.Second, "jobs").Result()
}
