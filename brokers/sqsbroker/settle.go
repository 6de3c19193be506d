package sqsbroker

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ackgap/ackgap"
)

// settleRequestsMin is the least number of settle requests (DeleteMessageBatch,
// ChangeMessageVisibilityBatch) a settler keeps in flight at once.
const settleRequestsMin = 4

// settleLinger is how long a settle waits for others to share its
// request before a request that is not full goes out (when none of its
// kind is in flight). A router's subscriber acks one message per worker
// at a time: without it, most requests would carry one or two entries.
// It lengthens the ack gap by as much at most; a lease is seconds long.
const settleLinger = 10 * time.Millisecond

// settleItem is one message to delete (after its commit) or to make
// visible after vt (a nack: NackDelay; a release: 0).
type settleItem struct {
	l      *lease
	delete bool
	vt     time.Duration
	// done receives the outcome, on the goroutine of the request that
	// carried the item; it must not block.
	done func(settleResult)
}

// settleResult is what SQS answered for one item.
type settleResult struct {
	// outcome, for a delete: AckDeleted, AckStale or AckFailed (zero for
	// a visibility change: the caller knows its own outcome).
	outcome ackgap.SettleOutcome
	change  changeResult // visibility changes
	err     error        // AckFailed: why
	at      time.Time    // when SQS answered with success; zero otherwise
}

// settler sends the deletes and visibility changes of settled messages
// for one consumer, coalesced across batches and workers: full requests
// of ten entries go out at once (up to maxInFlight requests at a time),
// and a partial one goes out once its oldest entry waited settleLinger
// and no request of its kind is in flight (Nagle's rule), so an idle
// consumer sends each settle within the linger and a busy one fills its
// requests while the previous ones are answered. The
// workers hand items over and go on receiving; the delete of a message
// still happens only after its commit, since items are handed over after
// it. A delete that fails (the whole request, or its entry, for a reason
// other than a lost lease) is tried deleteAttempts times; after that the
// message is delivered again once its lease lapses, and the inbox acks
// that copy as a duplicate: the failure is logged as an error and counted
// (Stats.DeleteFailed).
type settler struct {
	client      *sqs.Client
	queueURL    string
	leases      *leases
	timeout     time.Duration // per request
	linger      time.Duration // settleLinger, but for tests
	logger      watermill.LoggerAdapter
	stats       *counters
	maxInFlight int

	in   chan []settleItem
	done chan struct{}
	// flushBy is, once close was called, the UnixNano time by which
	// every request must end: close + timeout. Zero before.
	flushBy atomic.Int64
}

// newSettler starts the settler of the queue at queueURL: requests time
// out after timeout, at most max(settleRequestsMin, workers) in flight, a
// partial one waits linger (settleLinger).
func newSettler(client *sqs.Client, queueURL string, leases *leases, timeout, linger time.Duration, workers int, logger watermill.LoggerAdapter, stats *counters) *settler {
	n := max(settleRequestsMin, workers)
	s := &settler{
		client: client, queueURL: queueURL, leases: leases, timeout: timeout, linger: linger, logger: logger, stats: stats,
		maxInFlight: n, in: make(chan []settleItem, 4*n), done: make(chan struct{}),
	}
	go s.run()
	return s
}

// submit hands items over; it blocks only while the settler is that far
// behind (backpressure). It must not be called after close.
func (s *settler) submit(items []settleItem) {
	if len(items) > 0 {
		s.in <- items
	}
}

// close sends what is pending and waits until every request was
// answered or timed out, all within the request timeout from now (no
// retry starts after it): then returns. Every submit must have returned
// before.
func (s *settler) close() {
	s.flushBy.Store(time.Now().Add(s.timeout).UnixNano())
	close(s.in)
	<-s.done
}

func (s *settler) run() {
	defer close(s.done)
	var dels, vis []settleItem
	var delSince, visSince time.Time // when the oldest pending item came
	linger := time.NewTimer(time.Hour)
	defer linger.Stop()
	inflight := 0
	var delBusy, visBusy int // requests in flight by kind
	type answer struct{ delete bool }
	answered := make(chan answer, s.maxInFlight)
	in := s.in
	// Requests go out on sender goroutines that stay, at most maxInFlight,
	// started as needed: a goroutine per request grew its stack through
	// the SDK's middleware stack on every call.
	type request struct {
		items []settleItem
		del   bool
	}
	requests := make(chan request)
	var senders sync.WaitGroup
	defer func() {
		close(requests)
		senders.Wait()
	}()
	nsenders := 0
	sender := func(req request, ok bool) {
		for ; ok; req, ok = <-requests {
			if req.del {
				s.deleteEntries(req.items)
			} else {
				s.changeVisibility(req.items)
			}
			answered <- answer{req.del}
		}
	}
	send := func(items []settleItem, del bool) {
		inflight++
		if del {
			delBusy++
		} else {
			visBusy++
		}
		req := request{items, del}
		select {
		case requests <- req: // an idle sender took it
			return
		default:
		}
		if nsenders < s.maxInFlight {
			nsenders++
			senders.Go(func() { sender(req, true) })
			return
		}
		// Every sender is started and fewer than maxInFlight requests are
		// in flight: one has been answered and is about to take this.
		requests <- req
	}
	for {
		closing := in == nil
		now := time.Now()
		for inflight < s.maxInFlight {
			switch {
			case len(dels) >= maxBatchEntries:
				send(dels[:maxBatchEntries:maxBatchEntries], true)
				dels = dels[maxBatchEntries:]
				delSince = now
			case len(vis) >= maxBatchEntries:
				send(vis[:maxBatchEntries:maxBatchEntries], false)
				vis = vis[maxBatchEntries:]
				visSince = now
			case len(dels) > 0 && (closing || delBusy == 0 && now.Sub(delSince) >= s.linger):
				send(dels, true)
				dels = nil
			case len(vis) > 0 && (closing || visBusy == 0 && now.Sub(visSince) >= s.linger):
				send(vis, false)
				vis = nil
			default:
				goto wait
			}
		}
	wait:
		if closing && inflight == 0 && len(dels) == 0 && len(vis) == 0 {
			return
		}
		// Wake when the oldest partial request's linger ends.
		var lingerC <-chan time.Time
		var next time.Duration
		if len(dels) > 0 && delBusy == 0 {
			next, lingerC = s.linger-now.Sub(delSince), linger.C
		}
		if len(vis) > 0 && visBusy == 0 {
			if d := s.linger - now.Sub(visSince); lingerC == nil || d < next {
				next, lingerC = d, linger.C
			}
		}
		if lingerC != nil {
			linger.Reset(max(next, 0)) // Go >= 1.23: no stale tick survives Reset
		}
		add := func(items []settleItem) {
			for _, it := range items {
				if it.delete {
					if len(dels) == 0 {
						delSince = time.Now()
					}
					dels = append(dels, it)
				} else {
					if len(vis) == 0 {
						visSince = time.Now()
					}
					vis = append(vis, it)
				}
			}
		}
		select {
		case <-lingerC:
		case items, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			add(items)
		case a := <-answered:
			inflight--
			if a.delete {
				delBusy--
			} else {
				visBusy--
			}
		}
		// Take everything submitted meanwhile before deciding what to send,
		// so that it shares requests.
	drain:
		for in != nil {
			select {
			case items, ok := <-in:
				if !ok {
					in = nil
					break drain
				}
				add(items)
			default:
				break drain
			}
		}
	}
}

// requestCtx bounds one SQS call; detached from every consumer context, so
// that messages settled during shutdown are still deleted.
func (s *settler) requestCtx() (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(s.timeout)
	if by := s.flushBy.Load(); by != 0 && by < deadline.UnixNano() {
		deadline = time.Unix(0, by)
	}
	return context.WithDeadline(context.Background(), deadline) //ackgapvet:ignore bgcontext settles committed messages, bounded by RequestTimeout (and by close's deadline)
}

// flushOver reports whether close's deadline passed: no request or retry
// starts after it.
func (s *settler) flushOver() bool {
	by := s.flushBy.Load()
	return by != 0 && time.Now().UnixNano() >= by
}

// deleteEntries deletes up to ten messages with DeleteMessageBatch,
// trying the entries that failed for a reason other than a lost lease
// again, deleteAttempts times in all.
func (s *settler) deleteEntries(items []settleItem) {
	todo := make([]int, len(items)) // indexes into items; an entry's Id is its index
	for i := range todo {
		todo[i] = i
	}
	errs := make([]error, len(items))
	tried := 0
	for attempt := 0; attempt < deleteAttempts && len(todo) > 0; attempt++ {
		if attempt > 0 && s.flushOver() {
			break
		}
		tried++
		if attempt > 0 {
			//ackgapvet:ignore sleep a short backoff between DeleteMessageBatch retries of messages already committed (100-200 ms, well inside the lease)
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		}
		entries := make([]types.DeleteMessageBatchRequestEntry, len(todo))
		for j, i := range todo {
			entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(items[i].l.receipt)}
		}
		ctx, cancel := s.requestCtx()
		out, err := s.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.queueURL), Entries: entries})
		cancel()
		answered := time.Now()
		if err != nil {
			for _, i := range todo {
				errs[i] = err
			}
			s.logger.Error("DeleteMessageBatch failed", err, watermill.LogFields{"entries": len(todo), "attempt": attempt + 1})
			continue
		}
		index := func(id *string) (int, bool) {
			i, err := strconv.Atoi(aws.ToString(id))
			return i, err == nil && i >= 0 && i < len(items)
		}
		var again []int
		for _, r := range out.Successful {
			if i, ok := index(r.Id); ok {
				s.stats.deleted.Add(1)
				items[i].done(settleResult{outcome: AckDeleted, at: answered})
			}
		}
		for _, f := range out.Failed {
			i, ok := index(f.Id)
			if !ok {
				continue
			}
			if lostCode(aws.ToString(f.Code)) {
				s.stats.stale.Add(1)
				items[i].done(settleResult{outcome: AckStale})
				continue
			}
			errs[i] = errors.New(aws.ToString(f.Code) + ": " + aws.ToString(f.Message))
			again = append(again, i)
		}
		todo = again
	}
	for _, i := range todo {
		s.stats.deleteFailed.Add(1)
		s.logger.Error("Delete failed: the message is delivered again when its lease lapses, and the inbox acks that copy as a duplicate", errs[i],
			watermill.LogFields{"sqs_message_id": items[i].l.messageID, "attempts": tried})
		items[i].done(settleResult{outcome: AckFailed, err: errs[i]})
	}
}

// changeVisibility sets the visibility of up to ten messages.
func (s *settler) changeVisibility(items []settleItem) {
	ls := make([]*lease, len(items))
	vts := make([]time.Duration, len(items))
	for i, it := range items {
		ls[i], vts[i] = it.l, it.vt
	}
	ctx, cancel := s.requestCtx()
	results := s.leases.changeVisibility(ctx, ls, vts)
	cancel()
	answered := time.Now()
	for i, it := range items {
		r := settleResult{change: results[i]}
		if results[i] == changeOK {
			r.at = answered
		}
		it.done(r)
	}
}

// counters are a consumer's settle counts (see [BatchConsumerStats]).
type counters struct {
	batches, received, deleted, stale, deleteFailed, nacked, released atomic.Int64
}
