package effect

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/hibiken/asynq"
)

// registerJobs enqueues a job per message: a redelivery enqueues it again,
// unless the job's id comes from the message (asynq.TaskID).
func registerJobs(r *message.Router, q *asynq.Client) {
	r.AddNoPublisherHandler("jobs", "events", nil, func(msg *message.Message) error {
		if _, err := q.EnqueueContext(msg.Context(), asynq.NewTask("index", msg.Payload), asynq.TaskID(msg.UUID)); err != nil { // clean: keyed by the message
			return err
		}
		_, err := q.Enqueue(asynq.NewTask("notify", msg.Payload)) // want `a job enqueued \(asynq.Client.Enqueue\)`
		return err
	})
}
