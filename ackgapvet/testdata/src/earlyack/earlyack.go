package earlyack

import (
	"context"
	"database/sql"
	"log"
	"net/http"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jmoiron/sqlx"
	"github.com/segmentio/kafka-go"
)

type early struct{ db *sql.DB }

func (h *early) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		sess.MarkMessage(msg, "") // want `medium: acks with sarama.ConsumerGroupSession.MarkMessage before the work \(a database write \(sql.DB.ExecContext\) at line \d+\): a crash or error in between loses the message`
		if _, err := h.db.ExecContext(sess.Context(), "INSERT INTO seen VALUES ($1)", msg.Value); err != nil {
			return err
		}
	}
	return nil
}

type late struct{ db *sql.DB }

// ConsumeClaim marks after the work: clean.
func (h *late) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if _, err := h.db.ExecContext(sess.Context(), "INSERT INTO seen VALUES ($1)", msg.Value); err != nil {
			return err
		}
		sess.MarkMessage(msg, "")
	}
	return nil
}

func poll(ctx context.Context, c *sqs.Client, url *string, client *http.Client) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if m.Body == nil { // poison: delete and skip, clean
				_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
				continue
			}
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}) // want `critical: acks with sqs.Client.DeleteMessage before the work \(calls earlyack.sendPayout, which makes an HTTP request`
			sendPayout(client, *m.Body)
		}
	}
}

func sendPayout(client *http.Client, body string) {
	_, _ = client.Post("http://payouts.local/"+body, "text/plain", nil)
}

func pollLate(ctx context.Context, c *sqs.Client, url *string, client *http.Client) {
	for {
		out, _ := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
		for _, m := range out.Messages {
			sendPayout(client, *m.Body)
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}) // clean: after the work
		}
	}
}

func register(r *message.Router, db *sql.DB) {
	r.AddMiddleware(middleware.InstantAck) // want `medium: middleware.InstantAck acks every message before its handler runs`
	r.AddNoPublisherHandler("h", "t", nil, func(msg *message.Message) error {
		msg.Ack() // want `acks with message.Message.Ack before the work`
		_, err := db.Exec("UPDATE stock SET n = 0")
		return err
	})
}

func registerSqlx(r *message.Router, db *sqlx.DB) {
	r.AddNoPublisherHandler("lake", "events", nil, func(msg *message.Message) error {
		msg.Ack() // want `acks with message.Message.Ack before the work \(a database write \(sqlx.DB.NamedExecContext\)`
		_, err := db.NamedExecContext(msg.Context(), "INSERT INTO events (event_id) VALUES (:id)", map[string]any{"id": msg.UUID})
		return err
	})
}

type handoff struct{ jobs chan *sarama.ConsumerMessage }

func (h *handoff) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		h.jobs <- msg
		sess.MarkMessage(msg, "") // want `acks with sarama.ConsumerGroupSession.MarkMessage while the message's work runs in another goroutine \(a send on h.jobs at line \d+\)`
	}
	return nil
}

type spawn struct{ db *sql.DB }

func (h *spawn) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		go h.apply(msg)
		sess.MarkMessage(msg, "") // want `acks with sarama.ConsumerGroupSession.MarkMessage while the message's work runs in another goroutine \(go h.apply at line \d+\)`
	}
	return nil
}

func (h *spawn) apply(msg *sarama.ConsumerMessage) {
	_, _ = h.db.Exec("INSERT INTO seen VALUES ($1)", msg.Offset)
}

type waited struct{ db *sql.DB }

// ConsumeClaim waits for its worker before it marks: clean.
func (h *waited) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		done := make(chan struct{})
		go func(m *sarama.ConsumerMessage) {
			defer close(done)
			_, _ = h.db.Exec("INSERT INTO seen VALUES ($1)", m.Offset)
		}(msg)
		<-done
		sess.MarkMessage(msg, "")
	}
	return nil
}

type markFirst struct{ current chan *sarama.ConsumerMessage }

// ConsumeClaim marks, then hands the message to the goroutine that reads
// h.current and does the work.
func (h markFirst) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		sess.MarkMessage(msg, "") // want `acks with sarama.ConsumerGroupSession.MarkMessage before the message is handed to another goroutine for its work \(a send on h.current at line \d+\)`
		h.current <- msg
	}
	return nil
}

type selectSend struct {
	out  chan *sarama.ConsumerMessage
	stop chan struct{}
}

// ConsumeClaim marks as soon as the printer has received the message.
func (h *selectSend) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		select {
		case h.out <- msg:
			sess.MarkMessage(msg, "") // want `acks with sarama.ConsumerGroupSession.MarkMessage while the message's work runs in another goroutine \(a send on h.out at line \d+\)`
		case <-h.stop:
			return nil
		}
	}
	return nil
}

// commitFirst commits each message, logs a failed commit, then hands the
// message to a goroutine (field trial, wave 32: nexrad-aws-notifier H1,
// which deletes an SQS message the same way): a crash or a stop loses it.
func commitFirst(ctx context.Context, r *kafka.Reader, handle func(kafka.Message)) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		err = r.CommitMessages(ctx, m) // want `acks with kafka.Reader.CommitMessages before the message is handed to another goroutine for its work \(go handle at line \d+\)`
		if err != nil {
			log.Println(err)
		}
		go handle(m)
	}
}

type batcher struct {
	db  *sql.DB
	buf []*message.Message
}

// run acks each Watermill message as it is buffered and inserts the
// buffer on the next tick (field trial, wave 32: events-api H1): a crash
// or a failed insert loses every acked message in the buffer.
func (b *batcher) run(msgs <-chan *message.Message, tick <-chan time.Time) {
	for {
		select {
		case <-tick:
			for _, m := range b.buf {
				_, _ = b.db.Exec("INSERT INTO events VALUES ($1)", m.Payload)
			}
			b.buf = b.buf[:0]
		case m := <-msgs:
			b.buf = append(b.buf, m)
			m.Ack() // want `acks with message.Message.Ack when the message is only buffered \(line \d+\), and the buffer is written in another case of the select \(a database write \(sql.DB.Exec\) at line \d+\)`
		}
	}
}

// runAfter acks the buffered messages after the insert: clean.
func (b *batcher) runAfter(msgs <-chan *message.Message, tick <-chan time.Time) {
	for {
		select {
		case <-tick:
			for _, m := range b.buf {
				if _, err := b.db.Exec("INSERT INTO events VALUES ($1)", m.Payload); err != nil {
					m.Nack()
					continue
				}
				m.Ack()
			}
			b.buf = b.buf[:0]
		case m := <-msgs:
			b.buf = append(b.buf, m)
		}
	}
}
