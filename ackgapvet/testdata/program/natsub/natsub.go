// Package natsub consumes NATS: JetStream subscriptions with manual acks,
// a core NATS queue subscription, a JetStream pull loop and a Consume
// callback (field trial, wave 39: programme-lv/tester's QueueSubscribe).
package natsub

import (
	"context"
	"database/sql"
	"log"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Orders records each order and acks it even when the update failed.
func Orders(js nats.JetStreamContext, db *sql.DB) error {
	_, err := js.Subscribe("orders", func(m *nats.Msg) {
		if _, err := db.Exec("UPDATE orders SET paid = true WHERE id = $1", string(m.Data)); err != nil {
			log.Printf("order: %v", err)
		}
		_ = m.Ack()
	}, nats.ManualAck())
	return err
}

// Results publishes each result for whoever asked (core NATS).
func Results(nc *nats.Conn) error {
	_, err := nc.QueueSubscribe("results", "workers", func(m *nats.Msg) {
		_ = nc.Publish("results.done", m.Data)
	})
	return err
}

// Pull fetches batches and acks each message after its update; a failed
// update is left for redelivery.
func Pull(ctx context.Context, sub *nats.Subscription, db *sql.DB) {
	for ctx.Err() == nil {
		msgs, err := sub.Fetch(10)
		if err != nil {
			continue
		}
		for _, m := range msgs {
			if _, err := db.ExecContext(ctx, "UPDATE stock SET n = n - 1 WHERE id = $1", string(m.Data)); err != nil {
				_ = m.Nak()
				continue
			}
			_ = m.Ack()
		}
	}
}

// Consume acks each shipment after its update.
func Consume(cons jetstream.Consumer, db *sql.DB) error {
	_, err := cons.Consume(func(m jetstream.Msg) {
		if _, err := m.Metadata(); err != nil {
			_ = m.Term() // not a JetStream message: no redelivery helps
			return
		}
		if _, err := db.Exec("UPDATE shipments SET sent = true WHERE id = $1", string(m.Data())); err != nil {
			_ = m.Nak()
			return
		}
		_ = m.Ack()
	})
	return err
}

// Certs records a certificate per request on core NATS and naks a failed
// one, as if JetStream would deliver it again (field trial, wave 40:
// openuem-worker): the Nak does nothing and the request is lost. Nothing
// redelivers a core message, so the INSERT repeats on no redelivery.
func Certs(nc *nats.Conn, db *sql.DB) error {
	_, err := nc.QueueSubscribe("certs", "workers", func(m *nats.Msg) {
		if _, err := db.Exec("INSERT INTO certs (request) VALUES ($1)", string(m.Data)); err != nil {
			_ = m.NakWithDelay(time.Minute)
			return
		}
		_ = m.Ack()
	})
	return err
}

// Reports stores each agent's report and answers it (core NATS request
// and reply): a failed insert is turned into a success by the rollback's
// result, and the agent hears "ok".
func Reports(nc *nats.Conn, db *sql.DB) error {
	_, err := nc.QueueSubscribe("reports", "workers", func(m *nats.Msg) {
		if err := saveReport(db, m.Data); err != nil {
			_ = m.Respond([]byte(err.Error()))
			return
		}
		_ = m.Respond([]byte("ok"))
	})
	return err
}

func saveReport(db *sql.DB, report []byte) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	if _, err := tx.Exec("DELETE FROM apps WHERE agent = $1", string(report)); err != nil {
		return tx.Rollback()
	}
	return tx.Commit()
}

// DB is the stock handlers' database.
var DB *sql.DB

// Handler is the code's own handler type, acked by Register after it
// returns nil.
type Handler func(ctx context.Context, m jetstream.Msg) error

// Register acks each message whose handler returned nil (field trial,
// wave 40: MVP's RegisterJsHandler).
func Register(ctx context.Context, cons jetstream.Consumer, h Handler) error {
	_, err := cons.Consume(func(m jetstream.Msg) {
		if h(ctx, m) == nil {
			_ = m.Ack()
		}
	})
	return err
}

// Stock is a handler Register runs.
func Stock(ctx context.Context, m jetstream.Msg) error {
	_, err := DB.ExecContext(ctx, "UPDATE stock SET reserved = true WHERE id = $1", string(m.Data()))
	return err
}

// Wire registers Stock.
func Wire(ctx context.Context, cons jetstream.Consumer) error {
	return Register(ctx, cons, Stock)
}

// Key fetches one message for a lookup: no loop, no consumer (field trial,
// wave 40: MVP's VerifyToken).
func Key(cons jetstream.Consumer) ([]byte, error) {
	m, err := cons.Next()
	if err != nil {
		return nil, err
	}
	return m.Data(), nil
}

// Next takes one message at a time from a JetStream pull subscription; a
// failed receive is logged and the loop goes on with no message in hand
// (field trial, wave 44: nats-service's SubscribeSync loop).
func Next(ctx context.Context, sub *nats.Subscription, db *sql.DB) {
	for ctx.Err() == nil {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			log.Printf("next: %v", err)
		}
		if msg == nil {
			continue
		}
		if _, err := db.ExecContext(ctx, "UPDATE stock SET n = n - 1 WHERE id = $1", string(msg.Data)); err != nil {
			_ = msg.Nak()
			continue
		}
		_ = msg.Ack()
	}
}
