package errack

import (
	"context"
	"database/sql"
	"log"
	"net/http"
	"os"

	"github.com/segmentio/kafka-go"
)

// switchErr assigns the work's error in the cases of a switch and tests it
// after (field trial wave 13, screwdriver H1): the failure is logged and
// the commit after it acks the message anyway.
func switchErr(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		switch string(m.Value) {
		case "start":
			_, err = db.ExecContext(ctx, "UPDATE builds SET state = 'running'")
		case "stop":
			_, err = db.ExecContext(ctx, "UPDATE builds SET state = 'stopped'")
		}
		if err != nil {
			log.Println(err)
		}
		_ = r.CommitMessages(ctx, m) // want `acks with kafka.Reader.CommitMessages even when db.ExecContext failed`
	}
}

// retryWords logs that it "will retry" and goes on to the next message
// (field trial wave 14, order-service H1): the words send nothing
// anywhere, and the next commit passes over the failed message.
func retryWords(ctx context.Context, r *kafka.Reader, handle func(kafka.Message) error) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := handle(m); err != nil { // want `a message whose handle fails is not acked but the loop goes on`
			log.Printf("handle error: %v - will retry", err)
			continue
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// limited waits on a rate limiter before each fetch (wave 16, convoy): a
// failed wait skips to the next iteration with no message in hand, so
// nothing is passed over.
func limited(ctx context.Context, r *kafka.Reader, allow func(context.Context) error, handle func(kafka.Message) error) {
	for {
		if err := allow(ctx); err != nil {
			log.Printf("rate limited: %v", err)
			continue
		}
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := handle(m); err != nil { // want `a message whose handle fails is not acked but the loop goes on`
			log.Printf("handle error: %v", err)
			continue
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// cleanupAfter logs a failed write and a failed clean-up, then commits
// (wave 18, Pennsieve/workflow-manager): the finding names the write; the
// clean-up's failure undoes no message.
func cleanupAfter(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if _, err := db.ExecContext(ctx, "UPDATE runs SET state = 'done'"); err != nil {
			log.Println(err)
		}
		if err := os.RemoveAll("/tmp/run"); err != nil {
			log.Println(err)
		}
		_ = r.CommitMessages(ctx, m) // want `acks with kafka.Reader.CommitMessages even when db.ExecContext failed`
	}
}

// deadLetterWhenConfigured leaves a failed message for redelivery only
// when a dead-letter queue is configured (wave 19, cortex H2): otherwise
// the failure falls through to the commit.
func deadLetterWhenConfigured(ctx context.Context, r *kafka.Reader, db *sql.DB, hasDLQ bool) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		_, err = db.ExecContext(ctx, "UPDATE runs SET state = 'done'")
		if err != nil && hasDLQ {
			continue
		}
		_ = r.CommitMessages(ctx, m) // want `acks with kafka.Reader.CommitMessages even when db.ExecContext failed \(line \d+\) unless hasDLQ`
	}
}

// deadLetterLost sends a message it cannot handle to the dead-letter topic
// and commits even when that send failed (wave 19, payment-processor H3):
// the message is then neither handled nor dead-lettered.
func deadLetterLost(ctx context.Context, r *kafka.Reader, dlq *kafka.Writer) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := dlq.WriteMessages(ctx, m); err != nil {
			log.Println(err)
		}
		_ = r.CommitMessages(ctx, m) // want `acks with kafka.Reader.CommitMessages even when dlq.WriteMessages failed`
	}
}

// commitFirst commits before its work: a failure after the commit is
// earlyack's, not a skipped message (a new user's payments loop).
func commitFirst(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
		if _, err := db.ExecContext(ctx, "INSERT INTO payments (v) VALUES ($1)", m.Value); err != nil {
			log.Println(err)
			continue
		}
	}
}

// validateRemote asks the user service to validate the request: an HTTP
// call, not a local validation (wave 20, golang-full's ValidateUser).
func validateRemote(c *http.Client, body []byte) error {
	_, err := c.Post("https://users.example.com/validate", "application/json", nil)
	return err
}

// remoteValidation skips a message whose remote validation failed
// (a timeout, a 5xx) and commits the next one past it.
func remoteValidation(ctx context.Context, r *kafka.Reader, c *http.Client) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := validateRemote(c, m.Value); err != nil { // want `a message whose validateRemote fails is not acked but the loop goes on`
			log.Println(err)
			continue
		}
		_ = r.CommitMessages(ctx, m)
	}
}
