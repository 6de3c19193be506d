package sqsbroker

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// maxBatchEntries is SQS's limit on entries per *Batch request.
const maxBatchEntries = 10

// lease is one received message's hold on its visibility. Fields after
// the first group are guarded by the leases' mutex.
type lease struct {
	receipt   string
	messageID string
	received  time.Time

	// deadline is when SQS makes the message visible again, as far as the
	// subscriber knows: the receive time plus the visibility timeout, then
	// each extension's request time plus the visibility timeout (so it
	// errs early, never late, for extensions).
	deadline   time.Time
	next       time.Time // next extension
	extensions int
	extending  bool // a request for this lease is in flight
	settled    bool // acked, nacked or released: no more extensions
	lost       bool // SQS refused an extension: the lease is gone
}

// leaseState is a copy of a lease's bookkeeping at settle time.
type leaseState struct {
	deadline   time.Time
	extensions int
	lost       bool
}

// leases tracks the leases of one subscription and, when heartbeat is on,
// extends them from one goroutine (run).
type leases struct {
	client   *sqs.Client
	queueURL string
	vt       time.Duration // visibility set by each extension
	interval time.Duration // between two extensions of one lease
	timeout  time.Duration // per request
	logger   watermill.LoggerAdapter

	mu     sync.Mutex
	cond   *sync.Cond // signalled when a request ends
	active map[*lease]struct{}
	wake   chan struct{}
}

func newLeases(client *sqs.Client, queueURL string, vt, interval, timeout time.Duration, logger watermill.LoggerAdapter) *leases {
	l := &leases{
		client: client, queueURL: queueURL, vt: vt, interval: interval, timeout: timeout, logger: logger,
		active: map[*lease]struct{}{}, wake: make(chan struct{}, 1),
	}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// add starts tracking the messages of one ReceiveMessage response that
// arrived at received.
func (ls *leases) add(msgs []types.Message, received time.Time) []*lease {
	out := make([]*lease, len(msgs))
	ls.mu.Lock()
	for i, m := range msgs {
		l := &lease{
			receipt: aws.ToString(m.ReceiptHandle), messageID: aws.ToString(m.MessageId),
			received: received, deadline: received.Add(ls.vt), next: received.Add(ls.interval),
		}
		ls.active[l] = struct{}{}
		out[i] = l
	}
	ls.mu.Unlock()
	select {
	case ls.wake <- struct{}{}:
	default:
	}
	return out
}

// settle stops extending l, waiting for an extension in flight so that
// the caller's own visibility change (delete, nack delay, release) comes
// after it, and returns l's bookkeeping.
func (ls *leases) settle(l *lease) leaseState {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l.settled = true
	delete(ls.active, l)
	for l.extending {
		ls.cond.Wait()
	}
	return leaseState{deadline: l.deadline, extensions: l.extensions, lost: l.lost}
}

// deadline returns l's current lease deadline.
func (ls *leases) deadline(l *lease) time.Time {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return l.deadline
}

// run extends leases until ctx ends; the subscription cancels ctx after
// its workers returned, so leases of messages in flight during a drain
// are kept.
func (ls *leases) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, wait := ls.due(time.Now())
		if len(due) > 0 {
			ls.extend(ctx, due)
			continue
		}
		timer.Reset(wait) // Go >= 1.23: no stale tick survives Reset
		select {
		case <-ctx.Done():
			return
		case <-ls.wake:
		case <-timer.C:
		}
	}
}

// due returns the leases to extend now, marked extending, or else how long
// to wait. Leases due within a third of the interval join a due one, so
// one batch request serves messages received together.
func (ls *leases) due(now time.Time) ([]*lease, time.Duration) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	soonest := time.Time{}
	for l := range ls.active {
		if l.extending || l.lost {
			continue
		}
		if soonest.IsZero() || l.next.Before(soonest) {
			soonest = l.next
		}
	}
	if soonest.IsZero() {
		return nil, time.Hour
	}
	if soonest.After(now) {
		return nil, soonest.Sub(now)
	}
	horizon := now.Add(ls.interval / 3)
	var due []*lease
	for l := range ls.active {
		if l.extending || l.lost || l.next.After(horizon) {
			continue
		}
		if ls.extendBy(l, now) <= 0 {
			// SQS keeps a message in flight at most 12 h from its receive.
			l.lost = true
			ls.logger.Info("Lease not extended: the message has been in flight for SQS's limit of 12h", watermill.LogFields{"sqs_message_id": l.messageID})
			continue
		}
		l.extending = true
		due = append(due, l)
	}
	return due, 0
}

// extendBy is the visibility an extension of l sent at now asks for: the
// queue's visibility timeout, capped so the message's total time in flight
// stays within VisibilityTimeoutMax (with a second of slack).
func (ls *leases) extendBy(l *lease, now time.Time) time.Duration {
	return min(ls.vt, VisibilityTimeoutMax-now.Sub(l.received)-time.Second)
}

// extend sends the extensions, ten per request, and records the results.
func (ls *leases) extend(ctx context.Context, due []*lease) {
	for start := 0; start < len(due); start += maxBatchEntries {
		chunk := due[start:min(start+maxBatchEntries, len(due))]
		sent := time.Now()
		vts := make([]time.Duration, len(chunk))
		for i, l := range chunk {
			vts[i] = ls.extendBy(l, sent)
		}
		results := ls.changeVisibility(ctx, chunk, vts)
		ls.mu.Lock()
		for i, l := range chunk {
			l.extending = false
			switch results[i] {
			case changeOK:
				l.deadline = sent.Add(vts[i])
				l.next = sent.Add(ls.interval)
				l.extensions++
			case changeLost:
				l.lost = true
				ls.logger.Info("Lease lost: SQS refused to extend the message's visibility; it may be delivered again", watermill.LogFields{
					"sqs_message_id": l.messageID, "lease_deadline": l.deadline,
				})
			default:
				// Try again soon; the lease still runs until its deadline.
				l.next = time.Now().Add(min(ls.interval/4, time.Second))
			}
		}
		ls.cond.Broadcast()
		ls.mu.Unlock()
	}
}

type changeResult int

const (
	changeRetry changeResult = iota // failed, may work later
	changeOK
	changeLost // the receipt handle no longer holds the message
)

// changeVisibility sets the visibility of up to ten leases, batch[i] to
// vts[i] (rounded up to seconds): one ChangeMessageVisibility call for one
// lease, ChangeMessageVisibilityBatch for more.
func (ls *leases) changeVisibility(ctx context.Context, batch []*lease, vts []time.Duration) []changeResult {
	ctx, cancel := context.WithTimeout(ctx, ls.timeout)
	defer cancel()
	results := make([]changeResult, len(batch))
	if len(batch) == 1 {
		_, err := ls.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: &ls.queueURL, ReceiptHandle: &batch[0].receipt, VisibilityTimeout: seconds(vts[0]),
		})
		results[0] = classifyChange(err)
		if results[0] == changeRetry && ctx.Err() == nil {
			ls.logger.Error("ChangeMessageVisibility failed", err, watermill.LogFields{"sqs_message_id": batch[0].messageID})
		}
		return results
	}
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
	for i, l := range batch {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(l.receipt), VisibilityTimeout: seconds(vts[i]),
		}
	}
	out, err := ls.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &ls.queueURL, Entries: entries})
	if err != nil {
		if ctx.Err() == nil {
			ls.logger.Error("ChangeMessageVisibilityBatch failed", err, watermill.LogFields{"entries": len(entries)})
		}
		return results // all changeRetry
	}
	for _, s := range out.Successful {
		if i, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && i < len(results) {
			results[i] = changeOK
		}
	}
	for _, f := range out.Failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || i >= len(results) {
			continue
		}
		if lostCode(aws.ToString(f.Code)) {
			results[i] = changeLost
		} else {
			ls.logger.Error("ChangeMessageVisibilityBatch entry failed", errors.New(aws.ToString(f.Code)+": "+aws.ToString(f.Message)),
				watermill.LogFields{"sqs_message_id": batch[i].messageID})
		}
	}
	return results
}

// classifyChange sorts the error of one ChangeMessageVisibility call.
func classifyChange(err error) changeResult {
	if err == nil {
		return changeOK
	}
	if lostLease(err) {
		return changeLost
	}
	return changeRetry
}

// lostLease reports whether err says the receipt handle no longer holds
// the message: it became visible again (and may have been received by
// someone else, with a new receipt handle) or was deleted.
func lostLease(err error) bool {
	var notInflight *types.MessageNotInflight
	var invalid *types.ReceiptHandleIsInvalid
	return errors.As(err, &notInflight) || errors.As(err, &invalid)
}

// lostCode is lostLease for a batch entry's error code.
func lostCode(code string) bool {
	switch code {
	case "MessageNotInflight", "ReceiptHandleIsInvalid",
		"AWS.SimpleQueueService.MessageNotInflight", "AWS.SimpleQueueService.ReceiptHandleIsInvalid":
		return true
	}
	return false
}
