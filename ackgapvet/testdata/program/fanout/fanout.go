// Package fanout has a consumer that only forwards (no state of its own:
// its publish is not an effect finding) and one that writes a row and then
// publishes (a dual write: reported).
package fanout

import (
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
)

type F struct {
	DB  *sql.DB
	Pub message.Publisher
}

// Split forwards each message to two topics with its own id.
func (f *F) Split(msg *message.Message) error {
	if err := f.Pub.Publish("audit", msg); err != nil {
		return err
	}
	return f.Pub.Publish("search", msg)
}

// Ship marks the order shipped, then publishes: the publish is outside the
// update's transaction.
func (f *F) Ship(msg *message.Message) error {
	if _, err := f.DB.Exec("UPDATE orders SET status = 'shipped' WHERE id = $1", string(msg.Payload)); err != nil {
		return err
	}
	return f.Pub.Publish("shipped", msg)
}

// Guard acks an empty message on a branch that returns, and publishes the
// others: the publish is not after the ack.
func (f *F) Guard(msg *message.Message) error {
	if len(msg.Payload) == 0 {
		msg.Ack()
		return nil
	}
	return f.Pub.Publish("guarded", msg)
}
