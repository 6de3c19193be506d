package effect

import (
	"context"
	"database/sql"
	"net/http"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v3/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/router"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/timestreamwrite"

	"example.com/payments"
)

type handlers struct {
	pub message.Publisher
	pay *payments.Client
}

func register(r *message.Router, ar *router.Router[*sql.Tx], h *handlers) {
	r.AddNoPublisherHandler("charge", "orders", nil, func(msg *message.Message) error {
		if payments.Amount(string(msg.Payload)) == 0 { // clean: no effect
			return nil
		}
		return h.pay.Charge(msg.Context(), string(msg.Payload)) // want `critical: the call of payments.Client.Charge, which makes an HTTP request \(http.Client.Do\), on the consumer path of watermill handler \(func literal\) repeats on every redelivery; give it an idempotency key derived from the message.s event id`
	})
	r.AddNoPublisherHandler("receipts", "orders", nil, h.notify)

	// A safe ackgap handler: a guarded transition with its outbox row, and
	// an outbox row of its own.
	_ = ar.AddHandler("billing", "orders", nil, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		if _, err := ackgap.ApplyTransition(ctx,
			&ackgap.Transition{Table: "orders", Key: msg.UUID, From: []string{"placed"}, To: "charging"},
			&ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + msg.UUID}); err != nil {
			return err
		}
		return ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "email.receipt", IdempotencyKey: "receipt:" + msg.UUID})
	})
}

func (h *handlers) notify(msg *message.Message) error {
	if len(msg.Payload) == 0 {
		return h.publishErrorMessage(msg)
	}
	if msg.Payload[0] == '!' {
		return h.pub.Publish("orders-dead-letter", msg) // clean: a second dead-letter record of one failure is noise
	}
	return h.pub.Publish("emails", msg) // want `high: a publish \(message.Publisher.Publish\) on the consumer path of watermill handler notify`
}

// publishErrorMessage sends the failed message to the error topic: clean.
func (h *handlers) publishErrorMessage(msg *message.Message) error {
	return h.pub.Publish("errors", msg)
}

// relay is a proper outbox relay: it claims in a transaction, commits, then
// calls out. Not on a consumer path, not inside the transaction: clean.
func relay(ctx context.Context, db *sql.DB, client *http.Client, url string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var key string
	if err := tx.QueryRowContext(ctx, "UPDATE outbox SET claimed = now() RETURNING key").Scan(&key); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", key)
	_, err = client.Do(req)
	return err
}

// archive calls out while its transaction is open.
func archive(ctx context.Context, db *sql.DB, client *http.Client) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO archive VALUES (1)"); err != nil {
		return err
	}
	if _, err := client.Post("http://cache.local/refresh", "text/plain", nil); err != nil { // want `low: an HTTP request \(http.Client.Post\) inside an open database transaction: it is made even when the transaction rolls back`
		return err
	}
	//ackgapvet:ignore effect the cache refresh is advisory and idempotent
	_, _ = client.Post("http://cache.local/refresh", "text/plain", nil)
	//ackgapvet:ignore effect
	_, _ = client.Post("http://cache.local/refresh", "text/plain", nil) // want `low: an HTTP request .* \(the //ackgapvet:ignore above gives no reason, so it suppresses nothing: add one\)`
	//ackgapvet:ignore efect the cache refresh is advisory
	_, _ = client.Post("http://cache.local/refresh", "text/plain", nil) // want `low: an HTTP request .* \(the //ackgapvet:ignore above names "efect", which is no check, so it suppresses nothing: name effect or all\)`
	_, _ = client.Get("http://cache.local/state")                       // clean: a GET is safe to repeat (RFC 9110)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://cache.local/state", nil)
	_, _ = client.Do(req) // clean: a GET
	del, _ := http.NewRequestWithContext(ctx, http.MethodDelete, "http://cache.local/state", nil)
	_, _ = client.Do(del) // clean: DELETE is idempotent (RFC 9110, 9.2.2)
	return tx.Commit()
}

// outboxPublish publishes through watermill-sql into the transaction: that
// is an outbox, clean.
func outboxPublish(tx *sql.Tx, msg *message.Message) error {
	pub, err := wsql.NewPublisher(tx)
	if err != nil {
		return err
	}
	return pub.Publish("charges", msg)
}

func lambdaHandler(ctx context.Context, ev events.SQSEvent, q *sqs.Client, store *s3.Client, ts *timestreamwrite.Client) error {
	for _, r := range ev.Records {
		if _, err := ts.WriteRecords(ctx, &timestreamwrite.WriteRecordsInput{}); err != nil { // clean: a record keyed by dimensions and time
			return err
		}
		if _, err := store.PutObject(ctx, &s3.PutObjectInput{Key: &r.MessageId}); err != nil { // clean: overwrite by key
			return err
		}
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{MessageBody: &r.Body}); err != nil { // want `medium: an AWS call \(sqs.Client.SendMessage\) on the consumer path of Lambda SQS handler lambdaHandler repeats`
			return err
		}
	}
	return nil
}

func kinesisHandler(ctx context.Context, ev events.KinesisEvent, q *sqs.Client) error {
	for _, r := range ev.Records {
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{MessageBody: &r.EventID}); err != nil { // want `medium: an AWS call \(sqs.Client.SendMessage\) on the consumer path of Lambda Kinesis handler kinesisHandler repeats`
			return err
		}
	}
	return nil
}

func registerKafka(q *sqs.Client) func(context.Context, events.KafkaEvent) error {
	return func(ctx context.Context, ev events.KafkaEvent) error {
		for _, recs := range ev.Records {
			for _, r := range recs {
				if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{MessageBody: &r.Value}); err != nil { // want `medium: an AWS call \(sqs.Client.SendMessage\) on the consumer path of Lambda Kafka handler \(func literal\) repeats`
					return err
				}
			}
		}
		return nil
	}
}

// forward takes one Kafka record but is no handler and called by none: clean.
func forward(ctx context.Context, r events.KafkaRecord, q *sqs.Client) error {
	_, err := q.SendMessage(ctx, &sqs.SendMessageInput{MessageBody: &r.Value})
	return err
}
