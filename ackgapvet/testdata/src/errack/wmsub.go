package errack

import (
	"database/sql"
	"log"

	"github.com/ThreeDotsLabs/watermill/message"
)

// process ranges over the channel a Watermill Subscriber's Subscribe
// returned, without a Router (field trial wave 6, devices-api): a
// subscription loop, whose own Ack is the ack.
func process(db *sql.DB, messages <-chan *message.Message) {
	for msg := range messages {
		if _, err := db.Exec("INSERT INTO devices (id) VALUES ($1)", msg.UUID); err != nil {
			log.Println(err)
		}
		msg.Ack() // want `acks with message.Message.Ack even when db.Exec failed`
	}
}

type counter struct{}

func (counter) Inc() {}

var failureCount counter

// processCounted counts a failed write and acks it anyway (wave 6
// devices-api H1): a counter named "failure" is not a dead-letter send.
func processCounted(db *sql.DB, messages <-chan *message.Message) {
	for msg := range messages {
		if _, err := db.Exec("INSERT INTO devices (id) VALUES ($1)", msg.UUID); err != nil {
			failureCount.Inc()
		}
		msg.Ack() // want `acks with message.Message.Ack even when db.Exec failed`
	}
}

// processDeferred acks every message on its way out (wave 6 devices-api
// H3): the failed insert is acked too.
func processDeferred(db *sql.DB, messages <-chan *message.Message) {
	for msg := range messages {
		handleDeferred(db, msg)
	}
}

func handleDeferred(db *sql.DB, msg *message.Message) {
	defer func() { msg.Ack() }() // want `defers message.Message.Ack, so the message is acked on every return`
	if _, err := db.Exec("INSERT INTO tasks (id) VALUES ($1)", msg.UUID); err != nil {
		log.Println(err)
		return
	}
}

// stall skips a failed message with neither Ack nor Nack (wave 12,
// trackchecker H1): the subscriber waits for one before the next message.
func stall(db *sql.DB, messages <-chan *message.Message, done <-chan struct{}) {
	for {
		select {
		case msg := <-messages:
			_, err := db.Exec("INSERT INTO tracks (id) VALUES ($1)", msg.UUID)
			if err != nil { // want `a message whose db.Exec fails is neither acked nor nacked, and the loop goes on`
				log.Println(err)
				continue
			}
			msg.Ack()
		case <-done:
			return
		}
	}
}

// nacked nacks the failed message: clean.
func nacked(db *sql.DB, messages <-chan *message.Message) {
	for msg := range messages {
		if _, err := db.Exec("INSERT INTO tracks (id) VALUES ($1)", msg.UUID); err != nil {
			msg.Nack()
			continue
		}
		msg.Ack()
	}
}
