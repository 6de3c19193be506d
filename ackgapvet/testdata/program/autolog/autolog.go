// Package autolog consumes with the offsets committed in the background
// (wave 15's payload-tracker-go and sources-api-go): a failure the handler
// only logs is committed past all the same.
package autolog

import (
	"context"
	"database/sql"
	"log"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
)

// Tracker records payload statuses.
type Tracker struct{ DB *sql.DB }

// Run polls with librdkafka's defaults: enable.auto.commit and
// enable.auto.offset.store on.
func (t *Tracker) Run() {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"group.id": "tracker"})
	if err != nil {
		log.Fatal(err)
	}
	for {
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			t.onMessage(e)
		}
	}
}

// onMessage returns nothing: a failed insert is logged and dropped.
func (t *Tracker) onMessage(m *kafka.Message) {
	if _, err := t.DB.Exec("INSERT INTO statuses (payload) VALUES ($1)", m.Value); err != nil {
		log.Printf("insert status: %v", err)
		return
	}
}

// Listener reads with ReadMessage, which commits as it returns.
type Listener struct {
	R  *kafkago.Reader
	DB *sql.DB
}

// Listen logs a failed update and reads on.
func (l *Listener) Listen(ctx context.Context) {
	for {
		m, err := l.R.ReadMessage(ctx)
		if err != nil {
			return
		}
		if err := l.update(ctx, m); err != nil {
			log.Printf("update: %v", err)
			continue
		}
	}
}

func (l *Listener) update(ctx context.Context, m kafkago.Message) error {
	_, err := l.DB.ExecContext(ctx, "UPDATE sources SET status = $1 WHERE id = 1", string(m.Value))
	return err
}

// Strict stops the process on a failed update: nothing is committed past
// it (not reported).
func (l *Listener) Strict(ctx context.Context) {
	for {
		m, err := l.R.ReadMessage(ctx)
		if err != nil {
			return
		}
		if err := l.update(ctx, m); err != nil {
			log.Fatalf("update: %v", err)
		}
	}
}
