// Package errack acks messages whose work failed, and the look-alikes that
// do not.
package errack

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

type group struct{ db *sql.DB }

func (g *group) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		var v struct{ ID string }
		if err := json.Unmarshal(msg.Value, &v); err != nil {
			log.Println("bad message", err)
			sess.MarkMessage(msg, "") // clean: a message that cannot be decoded is skipped on purpose
			continue
		}
		_, err := g.db.ExecContext(sess.Context(), "UPDATE stock SET n = n - 1 WHERE id = $1", v.ID)
		if err != nil {
			log.Println("update failed", err)
		}
		sess.MarkMessage(msg, "") // want `acks with sarama.ConsumerGroupSession.MarkMessage even when g.db.ExecContext failed \(line \d+\)`
	}
	return nil
}

type onSuccess struct{ done chan error }

// ConsumeClaim marks a message only when the worker reports success
// (field trial wave 8, nuclio H1): a failed one is skipped.
func (g *onSuccess) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		err := <-g.done
		if err == nil { // want `the message is acked only when its work succeeded \(sarama.ConsumerGroupSession.MarkMessage inside if err == nil\)`
			sess.MarkMessage(msg, "")
		}
	}
	return nil
}

// ConsumeClaim stops the partition on a failure: clean.
func (g *onSuccessStops) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		err := <-g.done
		if err == nil {
			sess.MarkMessage(msg, "")
		} else {
			return err
		}
	}
	return nil
}

type onSuccessStops struct{ done chan error }

type skipper struct{ db *sql.DB }

func (g *skipper) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if _, err := g.db.ExecContext(sess.Context(), "UPDATE stock SET n = n - 1"); err != nil { // want `a message whose g.db.ExecContext fails is not acked but the loop goes on, and Kafka commits offsets, not messages: the next message's sarama.ConsumerGroupSession.MarkMessage commits past it`
			log.Println(err)
			continue
		}
		sess.MarkMessage(msg, "")
	}
	return nil
}

type elseMark struct{ db *sql.DB }

func (g *elseMark) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		_, err := g.db.ExecContext(sess.Context(), "UPDATE stock SET n = n - 1")
		if err != nil { // want `a message whose g.db.ExecContext fails is not acked but the loop goes on`
			log.Println(err)
		} else {
			sess.MarkMessage(msg, "")
		}
	}
	return nil
}

type careful struct{ db *sql.DB }

// ConsumeClaim stops the partition on a failure: clean.
func (g *careful) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if _, err := g.db.ExecContext(sess.Context(), "UPDATE stock SET n = n - 1"); err != nil {
			return err
		}
		sess.MarkMessage(msg, "")
	}
	return nil
}

func poll(ctx context.Context, c *sqs.Client, url *string) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if _, err := http.Post("http://ship.local/", "text/plain", nil); err != nil {
				log.Println(err)
				_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}) // want `acks with sqs.Client.DeleteMessage when http.Post fails`
				continue
			}
			if _, err := http.Post("http://bill.local/", "text/plain", nil); err != nil {
				// To the dead-letter queue first (the post's failure is clean), but a failed send is deleted all the same.
				_, _ = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url}) // want `the error of c.SendMessage is dropped unread`
				_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
				continue
			}
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
		}
	}
}

func forward(ctx context.Context, c *sqs.Client, url *string, hc *http.Client) {
	for {
		out, _ := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
		for _, m := range out.Messages {
			resp, err := hc.Post("http://worker.local/", "text/plain", nil)
			if err != nil {
				continue
			}
			resp.Body.Close()
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}) // want `acks with sqs.Client.DeleteMessage after hc.Post \(line \d+\) without reading its status`
		}
	}
}

func forwardChecked(ctx context.Context, c *sqs.Client, url *string, hc *http.Client) {
	for {
		out, _ := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
		for _, m := range out.Messages {
			resp, err := hc.Post("http://worker.local/", "text/plain", nil)
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode >= 300 {
				continue
			}
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}) // clean: the status is checked
		}
	}
}

var errGone = errors.New("gone")

func register(r *message.Router, db *sql.DB) {
	r.AddNoPublisherHandler("h", "t", nil, func(msg *message.Message) error {
		if _, err := db.Exec("UPDATE stock SET n = 0"); err != nil {
			log.Println(err)
			return nil // want `returns without an error when db.Exec fails \(line \d+\): the watermill handler acks the message`
		}
		return nil
	})
	r.AddNoPublisherHandler("h2", "t", nil, func(msg *message.Message) error {
		err := remove(db)
		if errors.Is(err, errGone) {
			return nil // clean: a classified, permanent error
		}
		return err
	})
}

// registerState updates a table whose name is filled in with fmt.Sprintf
// (wave 31, OpenFoundry H6): the UPDATE is a write all the same, and a
// failure turned into a nil return is acked.
func registerState(r *message.Router, db *sql.DB, table string) {
	r.AddNoPublisherHandler("state", "t", nil, func(msg *message.Message) error {
		q := fmt.Sprintf("UPDATE %s SET state = $1 WHERE id = 1", table)
		if _, err := db.Exec(q, string(msg.Payload)); err != nil {
			log.Println(err)
			return nil // want `returns without an error when db.Exec fails \(line \d+\): the watermill handler acks the message`
		}
		var version int
		if err := db.QueryRow(fmt.Sprintf("UPDATE %s SET version = version + 1 WHERE id = 1 RETURNING version", table)).Scan(&version); err != nil {
			log.Println(err)
			return nil // want `returns without an error when`
		}
		return nil
	})
}

// registerHooks posts each message to a webhook (wave 29, web-of-hooks
// H1): a handler that only logs the response acks a 5xx by returning nil.
func registerHooks(r *message.Router, hc *http.Client) {
	r.AddNoPublisherHandler("hook", "t", nil, func(msg *message.Message) error {
		resp, err := hc.Post("http://hooks.local/", "application/json", nil)
		if err != nil {
			return err
		}
		log.Println(resp)
		return nil // want `returns no error after hc.Post \(line \d+\) without reading its status, and the watermill handler acks the message on that nil`
	})
	r.AddNoPublisherHandler("hook2", "t", nil, func(msg *message.Message) error {
		resp, err := hc.Post("http://hooks.local/", "application/json", nil)
		if err != nil {
			return err
		}
		if resp.StatusCode >= 300 {
			return errors.New(resp.Status)
		}
		return nil // clean: the status is checked
	})
}

// registerBooking publishes a failure event for one kind of failure only
// (wave 24, go-event-driven H7): every other failure is acked unsent.
func registerBooking(r *message.Router, db *sql.DB, pub message.Publisher) {
	r.AddNoPublisherHandler("book", "t", nil, func(msg *message.Message) error {
		if err := remove(db); err != nil {
			if errors.Is(err, errGone) {
				return pub.Publish("booking-failed", msg)
			}
			return nil // want `returns without an error when remove fails \(line \d+\): the watermill handler acks the message`
		}
		return nil
	})
	r.AddNoPublisherHandler("book2", "t", nil, func(msg *message.Message) error {
		if err := remove(db); err != nil {
			if errors.Is(err, errGone) {
				log.Print("gone")
			}
			return pub.Publish("booking-failed", msg) // clean: every failure is published
		}
		return nil
	})
}

func remove(db *sql.DB) error {
	_, err := db.Exec("DELETE FROM stock")
	return err
}

func Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		if _, err := http.Post("http://ship.local/"+rec.Body, "text/plain", nil); err != nil { // want `a record whose http.Post fails \(line \d+\) is only logged`
			log.Println(err)
			continue
		}
	}
	return resp, nil
}

// HandleDropped drops each record's write error inside the loop over the
// records, then succeeds for the batch (a new user's Lambda).
func HandleDropped(ctx context.Context, ev events.SQSEvent, db *sql.DB) (events.SQSEventResponse, error) {
	for _, rec := range ev.Records {
		db.ExecContext(ctx, "UPDATE stock SET n = n - 1 WHERE id = $1", rec.Body) // want `the error of db.ExecContext is dropped unread, and the function returns no error \(line \d+\): the Lambda SQS handler acks the message on that nil`
	}
	return events.SQSEventResponse{}, nil
}

type Service interface {
	ChangeCount(ctx context.Context, id string, by int) error
}

type Aggregator struct{ svc Service }

// Aggregate prints a failed update and succeeds: Lambda deletes the batch.
func (a *Aggregator) Aggregate(ctx context.Context, ev events.SQSEvent) error {
	for _, rec := range ev.Records {
		err := a.svc.ChangeCount(ctx, rec.MessageId, 1)
		if err != nil { // want `a record whose a.svc.ChangeCount fails \(line \d+\) is only logged`
			log.Println(err)
		} else {
			log.Println("changed")
		}
	}
	return nil
}

type orSkipper struct{ db *sql.DB }

// ConsumeClaim skips a failed message, or one that changed no row: the
// error is the left operand of ||.
func (g *orSkipper) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		res, err := g.db.ExecContext(sess.Context(), "UPDATE stock SET n = n - 1")
		if err != nil || res == nil { // want `a message whose g.db.ExecContext fails is not acked but the loop goes on`
			log.Println(err)
			continue
		}
		sess.MarkMessage(msg, "")
	}
	return nil
}

// staging merges, then drops the staging table and ignores a failed drop
// (field trial, wave 41: tipoca-stream): housekeeping, not the work. Clean.
type staging struct{ db *sql.DB }

func (g *staging) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if _, err := g.db.ExecContext(sess.Context(), "INSERT INTO target SELECT * FROM staging ON CONFLICT DO NOTHING"); err != nil {
			return err
		}
		if _, err := g.db.ExecContext(sess.Context(), "DROP TABLE IF EXISTS staging"); err != nil {
			log.Println("ignore: drop staging", err)
		}
		sess.MarkMessage(msg, "")
	}
	return nil
}
