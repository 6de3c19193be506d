package sqsbroker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/middleware"
)

// sqsTap sits between an SQS client and the local server: it records the
// receipt handles of every DeleteMessageBatch, counts the ReceiveMessage
// calls in flight, and fails every DeleteMessageBatch while failDeletes
// is set (before sending it).
type sqsTap struct {
	next http.RoundTripper

	mu           sync.Mutex
	failDeletes  bool
	deleted      map[string]int  // receipt handle -> DeleteMessageBatch requests that carried it
	committed    map[string]bool // receipt handles whose batch committed (see commitTracking)
	early        []string        // receipt handles sent for deletion before their commit
	entries      []int           // entries per DeleteMessageBatch request sent
	receiving    int             // ReceiveMessage calls in flight
	maxReceiving int             // the most at once
}

var errInjected = errors.New("injected: DeleteMessageBatch refused by the test")

func newSQSTap(t *testing.T) *sqsTap {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &sqsTap{next: tr, deleted: map[string]int{}, committed: map[string]bool{}}
}

// optFns points a client at the local server through the tap, without the
// SDK's own retries (so an injected failure is one failed attempt).
func (tp *sqsTap) optFns(t *testing.T) []func(*sqs.Options) {
	fns := optFns(t)
	return append(fns, func(o *sqs.Options) {
		o.HTTPClient = &http.Client{Transport: tp}
		o.RetryMaxAttempts = 1
	})
}

func (tp *sqsTap) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Header.Get("X-Amz-Target") {
	case "AmazonSQS.ReceiveMessage":
		tp.mu.Lock()
		tp.receiving++
		tp.maxReceiving = max(tp.maxReceiving, tp.receiving)
		tp.mu.Unlock()
		defer func() {
			tp.mu.Lock()
			tp.receiving--
			tp.mu.Unlock()
		}()
	case "AmazonSQS.DeleteMessageBatch":
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(strings.NewReader(string(body)))
		var in struct {
			Entries []struct{ ReceiptHandle string }
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		tp.mu.Lock()
		if tp.failDeletes {
			tp.mu.Unlock()
			return nil, errInjected
		}
		tp.entries = append(tp.entries, len(in.Entries))
		for _, e := range in.Entries {
			tp.deleted[e.ReceiptHandle]++
			if !tp.committed[e.ReceiptHandle] {
				tp.early = append(tp.early, e.ReceiptHandle)
			}
		}
		tp.mu.Unlock()
	}
	return tp.next.RoundTrip(req)
}

func (tp *sqsTap) setFailDeletes(on bool) {
	tp.mu.Lock()
	tp.failDeletes = on
	tp.mu.Unlock()
}

// commitTracking wraps p: before p runs, none of the batch's messages may
// have been sent for deletion; after p returned (the transaction committed
// or failed), the acked ones may be.
func (tp *sqsTap) commitTracking(p sqsbroker.BatchFunc) sqsbroker.BatchFunc {
	return func(ctx context.Context, msgs []*message.Message) []error {
		tp.mu.Lock()
		for _, m := range msgs {
			if h := m.Metadata.Get(sqsbroker.MetadataReceiptHandle); tp.deleted[h] > 0 {
				tp.early = append(tp.early, h)
			}
		}
		tp.mu.Unlock()
		errs := p(ctx, msgs)
		tp.mu.Lock()
		for i, err := range errs {
			if err == nil {
				tp.committed[msgs[i].Metadata.Get(sqsbroker.MetadataReceiptHandle)] = true
			}
		}
		tp.mu.Unlock()
		return errs
	}
}

// inboxLog collects the inbox outcomes per event id.
type inboxLog struct {
	mu  sync.Mutex
	got map[string][]ackgap.Outcome
}

func (l *inboxLog) observe(_ context.Context, r *ackgap.InboxReport) {
	l.mu.Lock()
	if l.got == nil {
		l.got = map[string][]ackgap.Outcome{}
	}
	l.got[r.EventID] = append(l.got[r.EventID], r.Outcome)
	l.mu.Unlock()
}

func (l *inboxLog) outcomes(id string) []ackgap.Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ackgap.Outcome(nil), l.got[id]...)
}

// errorLog is a logger that keeps the messages of its Error calls.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Error(msg string, err error, _ watermill.LogFields) {
	l.mu.Lock()
	l.msgs = append(l.msgs, msg)
	l.mu.Unlock()
}
func (l *errorLog) Info(string, watermill.LogFields)                 {}
func (l *errorLog) Debug(string, watermill.LogFields)                {}
func (l *errorLog) Trace(string, watermill.LogFields)                {}
func (l *errorLog) With(watermill.LogFields) watermill.LoggerAdapter { return l }

func (l *errorLog) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// TestBatchConsumerCoalescedDeletesAfterCommit: 60 events through a
// BatchConsumer with 3 pollers and 2 workers. Every message is sent for
// deletion only after its batch committed (the deletes go out in the
// background, coalesced across batches), every DeleteMessageBatch holds at
// most ten entries, every event applies exactly once, the three pollers
// have their receives in flight at once but never more, and once Close
// returned every delete was answered: the queue is empty and nothing
// returns.
func TestBatchConsumerCoalescedDeletesAfterCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client(t)
	name, url := createQueue(t, c, "batch-coalesce", 30*time.Second, nil)
	pub := newPublisher(t)
	const n = 60
	for i := range n {
		require.NoError(t, pub.Publish(name, event(fmt.Sprintf("E%d", i))))
	}
	b := newPGBackend(t)
	p, err := batch.New(b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"}, Handler: applyPG})
	require.NoError(t, err)
	tap := newSQSTap(t)
	o := &observed{}
	bc, err := sqsbroker.NewBatchConsumer(ctx, tap.commitTracking(p.ProcessErrors), &sqsbroker.SubscriberConfig{
		OptFns: tap.optFns(t), Queue: name, AttemptTimeout: 5 * time.Second, WaitTimeSeconds: 1,
		Pollers: 3, Workers: 2, AckObserver: o.observeAck,
	}, testLogger())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(ctx) }()
	t.Cleanup(func() { _ = bc.Close() })

	eventually(t, 30*time.Second, "every event applied", func() bool { return len(b.applied(t)) == n })
	eventually(t, 10*time.Second, "the three pollers waiting at once on the drained queue", func() bool {
		tap.mu.Lock()
		defer tap.mu.Unlock()
		return tap.maxReceiving == 3
	})
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)

	applied := b.applied(t)
	for i := range n {
		require.Equal(t, 1, applied[fmt.Sprintf("E%d", i)], "E%d exactly once", i)
	}
	tap.mu.Lock()
	require.Empty(t, tap.early, "no message sent for deletion before its batch committed")
	require.LessOrEqual(t, tap.maxReceiving, 3, "never more receives in flight than Pollers")
	total := 0
	for _, k := range tap.entries {
		require.LessOrEqual(t, k, 10)
		total += k
	}
	tap.mu.Unlock()
	require.GreaterOrEqual(t, total, n)
	st := bc.Stats()
	require.Equal(t, int64(n), st.Received, "nothing came back")
	require.Equal(t, int64(n), st.Deleted)
	require.Zero(t, st.DeleteFailed)
	require.Len(t, o.ackReports(), n, "every message settled and reported by the time Close returned")
	for _, r := range o.ackReports() {
		require.Equal(t, sqsbroker.AckDeleted, r.Outcome)
		require.False(t, r.Confirmed.Before(r.Settled), "deleted after its batch settled (committed)")
	}
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, [2]int{0, 0}, [2]int{visible, inFlight}, "the queue is empty once Close returned")
}

// TestBatchConsumerDeleteFailureRedelivers: every DeleteMessageBatch fails
// for a while. A message whose delete failed after every attempt is
// logged as an error and counted (Stats.DeleteFailed), reported
// AckFailed with ackgap.ErrAckNotConfirmed, and delivered again once its
// lease lapses; the inbox acks that copy as a duplicate, which is then
// deleted. Every event applies exactly once.
func TestBatchConsumerDeleteFailureRedelivers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client(t)
	name, url := createQueue(t, c, "batch-delfail", 2*time.Second, nil)
	pub := newPublisher(t)
	const n = 5
	for i := range n {
		require.NoError(t, pub.Publish(name, event(fmt.Sprintf("E%d", i))))
	}
	b := newPGBackend(t)
	inbox := &inboxLog{}
	p, err := batch.New(b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1", Observer: inbox.observe}, Handler: applyPG})
	require.NoError(t, err)
	tap := newSQSTap(t)
	tap.setFailDeletes(true)
	o := &observed{}
	log := &errorLog{}
	bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, &sqsbroker.SubscriberConfig{
		OptFns: tap.optFns(t), Queue: name, AttemptTimeout: time.Second, VisibilityFactor: 2, WaitTimeSeconds: 1,
		AckObserver: o.observeAck,
	}, log)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(ctx) }()
	t.Cleanup(func() { _ = bc.Close() })

	eventually(t, 30*time.Second, "a delete that failed after every attempt", func() bool { return bc.Stats().DeleteFailed > 0 })
	tap.setFailDeletes(false)
	eventually(t, 30*time.Second, "every event applied and the queue empty", func() bool {
		visible, inFlight := queueCounts(t, c, url)
		return len(b.applied(t)) == n && visible == 0 && inFlight == 0
	})
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)

	applied := b.applied(t)
	for i := range n {
		require.Equal(t, 1, applied[fmt.Sprintf("E%d", i)], "E%d exactly once", i)
	}
	st := bc.Stats()
	failed := map[string]bool{}
	deleted := map[string]bool{}
	nFailed := 0
	for _, r := range o.ackReports() {
		switch r.Outcome {
		case sqsbroker.AckFailed:
			nFailed++
			failed[r.EventID] = true
			s, _ := r.d.Settlement()
			require.ErrorIs(t, s.Err, ackgap.ErrAckNotConfirmed, "the Delivery says the ack was not confirmed")
			require.ErrorIs(t, r.Err, errInjected)
		case sqsbroker.AckDeleted:
			deleted[r.EventID] = true
		}
	}
	require.NotEmpty(t, failed)
	require.Equal(t, int64(nFailed), st.DeleteFailed, "every failed delete counted")
	require.Equal(t, nFailed, log.count("Delete failed"), "every failed delete logged as an error")
	for id := range failed {
		require.Contains(t, inbox.outcomes(id), ackgap.OutcomeDuplicate, "%s came back and the inbox acked it as a duplicate", id)
		require.True(t, deleted[id], "%s's duplicate was deleted", id)
	}
}
