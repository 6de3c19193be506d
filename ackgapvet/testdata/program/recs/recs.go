// Package recs polls for recommendations the way wave 15's ros-ocp-backend
// does: the loop calls a handler that commits the message itself.
package recs

import (
	"database/sql"
	"log"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// startConsumer calls each message's handler, which commits it itself
// (wave 15, ros-ocp-backend's StartConsumer and PollForRecommendations).
func startConsumer(c *kafka.Consumer, handler func(*kafka.Message, *kafka.Consumer)) {
	for {
		msg, err := c.ReadMessage(time.Second)
		if err == nil {
			handler(msg, c)
		}
	}
}

func commitMsg(msg *kafka.Message, c *kafka.Consumer) {
	if _, err := c.CommitMessage(msg); err != nil {
		log.Printf("commit: %v", err)
	}
}

// PollerDB is the store.
var PollerDB *sql.DB

func pollForRecommendations(msg *kafka.Message, c *kafka.Consumer) {
	if _, err := PollerDB.Exec("UPDATE workloads SET polled = now() WHERE id = $1", string(msg.Value)); err != nil {
		log.Printf("poll: %v", err)
		return
	}
	commitMsg(msg, c)
}

// RunPoller consumes.
func RunPoller(c *kafka.Consumer) {
	startConsumer(c, pollForRecommendations)
}
