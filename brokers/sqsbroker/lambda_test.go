package sqsbroker_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

// loadEvent reads an SQS event in the JSON shape Lambda sends.
func loadEvent(t testing.TB, path string) events.SQSEvent {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(raw, &ev))
	return ev
}

// lambdaSetup returns a Lambda handler running h behind the router chain
// of consumer "c1" on a SQLite inbox.
func lambdaSetup(t testing.TB, o *observed, h router.HandlerFunc[*sql.Tx]) (*backend, sqsbroker.LambdaHandlerFunc) {
	t.Helper()
	b := newBackend(t)
	dead := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	t.Cleanup(func() { _ = dead.Close() })
	r, err := router.New[*sql.Tx](b.store, &router.Config{
		DeadLetter: dead, InboxConfig: middleware.InboxConfig{Observer: o.observeInbox}, RetryInitialInterval: time.Millisecond, RetryMaxInterval: time.Millisecond,
	})
	require.NoError(t, err)
	chain, err := r.Chain("c1", h)
	require.NoError(t, err)
	lh, err := sqsbroker.LambdaHandler(chain, nil)
	require.NoError(t, err)
	return b, lh
}

// TestLambdaPartialBatchS12 (case S12): a batch of five records where
// E3's database is unavailable. The partial batch response lists exactly
// E3's MessageId; E1, E2, E4 and E5 are committed. When the whole batch
// is delivered again (a misconfigured event source), E1, E2, E4 and E5 are
// skipped as duplicates and E3 is applied: every event once.
func TestLambdaPartialBatchS12(t *testing.T) {
	t.Parallel()
	o := &observed{}
	var mu sync.Mutex
	failE3 := true
	seen := map[string]message.Metadata{}
	b, lh := lambdaSetup(t, o, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		if d, ok := ackgap.DeliveryFromContext(ctx); !ok || d.MessageID != msg.Metadata.Get(sqsbroker.MetadataMessageID) {
			return ackgap.Permanent("test", errors.New("no ackgap.Delivery with the record's MessageId"))
		}
		mu.Lock()
		seen[id] = msg.Metadata
		fail := id == "E3" && failE3
		mu.Unlock()
		if err := apply(ctx, tx, msg); err != nil {
			return err
		}
		if fail {
			return fmt.Errorf("orders database: %w", ackgap.ErrStoreUnavailable)
		}
		return nil
	})
	ev := loadEvent(t, "testdata/sqs_event_s12.json")
	require.Len(t, ev.Records, 5)
	e3 := ev.Records[2].MessageId

	resp, err := lh(context.Background(), ev)
	require.NoError(t, err, "a partial failure is not a function error (that would retry the whole batch)")
	require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: e3}}, resp.BatchItemFailures)
	raw, err := json.Marshal(resp)
	require.NoError(t, err)
	require.JSONEq(t, `{"batchItemFailures":[{"itemIdentifier":"`+e3+`"}]}`, string(raw))
	require.Equal(t, map[string]int{"E1": 1, "E2": 1, "E4": 1, "E5": 1}, b.applied(t))
	mu.Lock()
	md := seen["E2"]
	mu.Unlock()
	require.Equal(t, ev.Records[1].MessageId, md.Get(sqsbroker.MetadataMessageID))
	require.Equal(t, ev.Records[1].ReceiptHandle, md.Get(sqsbroker.MetadataReceiptHandle))
	require.Equal(t, "1", md.Get(sqsbroker.MetadataReceiveCount))
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", md.Get("traceparent"))

	mu.Lock()
	failE3 = false
	mu.Unlock()
	resp, err = lh(context.Background(), loadEvent(t, "testdata/sqs_event_s12_redelivered.json"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, map[string]int{"E1": 1, "E2": 1, "E3": 1, "E4": 1, "E5": 1}, b.applied(t))
	require.Equal(t, map[ackgap.Outcome]int{
		ackgap.OutcomeApplied:   5, // E1, E2, E4, E5, then E3
		ackgap.OutcomeFailed:    3, // E3's three attempts in place
		ackgap.OutcomeDuplicate: 4, // E1, E2, E4, E5 redelivered
	}, o.outcomes())
}

// TestLambdaFIFOStopsAtFirstFailure: on a FIFO queue the records after a
// failure are reported failed without being run, so none overtakes the
// failed one.
func TestLambdaFIFOStopsAtFirstFailure(t *testing.T) {
	t.Parallel()
	o := &observed{}
	var runs []string
	b, lh := lambdaSetup(t, o, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		runs = append(runs, id)
		if id == "E2" {
			return context.Canceled // not retried, not dead-lettered
		}
		return apply(ctx, tx, msg)
	})
	ev := loadEvent(t, "testdata/sqs_event_fifo.json")
	resp, err := lh(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []events.SQSBatchItemFailure{
		{ItemIdentifier: ev.Records[1].MessageId}, {ItemIdentifier: ev.Records[2].MessageId},
	}, resp.BatchItemFailures)
	require.Equal(t, []string{"E1", "E2"}, runs, "E3 not run")
	require.Equal(t, map[string]int{"E1": 1}, b.applied(t))
}

// TestLambdaPanicAndDeadline: a panicking record fails alone; records not
// started before the deadline margin are reported failed, unprocessed.
func TestLambdaPanicAndDeadline(t *testing.T) {
	t.Parallel()
	ev := loadEvent(t, "testdata/sqs_event_s12.json")
	var calls int
	lh, err := sqsbroker.LambdaHandler(func(msg *message.Message) ([]*message.Message, error) {
		calls++
		if msg.Metadata.Get(ackgap.MetadataEventIDKey) == "E4" {
			panic("boom")
		}
		return nil, nil
	}, nil)
	require.NoError(t, err)
	resp, err := lh(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[3].MessageId}}, resp.BatchItemFailures)
	require.Equal(t, 5, calls)

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	calls = 0
	resp, err = lh(ctx, ev)
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 5, "deadline closer than DeadlineMargin (1s): nothing started")
	require.Zero(t, calls)

	_, err = sqsbroker.LambdaHandler(nil, &sqsbroker.LambdaConfig{DeadlineMargin: -1})
	require.ErrorContains(t, err, "invalid config: handler is nil")
	require.ErrorContains(t, err, "DeadlineMargin is -1ns")

	ev.Records[0].MessageId = ""
	_, err = lh(context.Background(), ev)
	require.True(t, err != nil && !errors.Is(err, context.Canceled), "a record without messageId fails the whole batch")
}
