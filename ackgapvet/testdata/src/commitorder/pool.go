package commitorder

import (
	"context"
	"database/sql"

	"github.com/IBM/sarama"
)

// poolHandler hands each claim's messages to a pool of workers over one
// channel, and each worker marks the messages it finished (field trial wave
// 13, kafka-elasticsearch-injector H1): a fast worker's mark passes over a
// slow one's message.
type poolHandler struct {
	db      *sql.DB
	workers int
}

func (h *poolHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	jobs := make(chan *sarama.ConsumerMessage)
	for i := 0; i < h.workers; i++ {
		go h.work(sess, jobs) // want `starts workers in a loop that all take messages from the channel jobs and each marks or commits those it finished \(sarama.ConsumerGroupSession.MarkMessage`
	}
	for m := range claim.Messages() {
		jobs <- m
	}
	close(jobs)
	return nil
}

func (h *poolHandler) work(sess sarama.ConsumerGroupSession, jobs <-chan *sarama.ConsumerMessage) {
	for m := range jobs {
		if _, err := h.db.ExecContext(context.Background(), "INSERT INTO docs VALUES ($1)", m.Value); err == nil {
			sess.MarkMessage(m, "")
		}
	}
}

// chanPerWorker gives each worker a channel of its own: clean.
func chanPerWorker(sess sarama.ConsumerGroupSession, chans []chan *sarama.ConsumerMessage) {
	for p := range chans {
		go func(in <-chan *sarama.ConsumerMessage) {
			for m := range in {
				sess.MarkMessage(m, "")
			}
		}(chans[p])
	}
}
