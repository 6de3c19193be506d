package sqsbroker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/logfield"
)

// BatchFunc runs msgs as one batch, in one database transaction, and
// returns one error per message, in order: nil when the message may be
// deleted (applied, or a duplicate), else why not; it returns only once
// the transaction committed or failed. batch.Processor's ProcessErrors
// method is one. [BatchConsumer] and [LambdaBatchHandler] Ack the messages
// it cleared and Nack the others after it returned, for what watches them
// (telemetry).
type BatchFunc func(ctx context.Context, msgs []*message.Message) []error

// BatchConsumer reads one SQS queue and runs each ReceiveMessage batch
// (up to MaxNumberOfMessages, 10) through a [BatchFunc], in one
// database transaction; after the commit it deletes the acked messages
// (applied and duplicate) and makes the others visible again after
// NackDelay. It is the batched counterpart of [Subscriber] plus a
// router, with the same lease handling: the queue's visibility timeout is
// checked against AttemptTimeout, which bounds one batch, and the
// heartbeat extends the leases of a batch until it is settled.
//
// Pollers receive loops keep that many ReceiveMessage calls in flight
// and hand the batches to Workers workers, each with one batch in its
// transaction at a time, so a worker that committed takes the next batch
// at once instead of waiting for a receive. The deletes and visibility
// changes of settled batches are sent in the background, coalesced across
// batches and workers into DeleteMessageBatch and
// ChangeMessageVisibilityBatch requests of up to ten entries (a request
// that is not full goes out as soon as the previous one of its kind was
// answered), so they overlap the next receives and transactions. A
// message is deleted only after its batch committed. A delete that still
// fails after three attempts is logged as an error and counted
// ([BatchConsumerStats].DeleteFailed): the message is delivered again
// when its lease lapses, and the inbox acks that copy as a duplicate
// without applying it again.
//
// Rejected messages (no event id, an id reused with another payload, a
// handler's ackgap.Permanent) are nacked like failed ones, with their
// reason logged: the queue's redrive policy moves them to its dead-letter
// queue after maxReceiveCount receives.
//
// On a FIFO queue a message group is an ordering key (ackgap.Delivery.Key
// is the MessageGroupId): the BatchFunc (batch.Processor) applies a
// group's messages of one batch in rounds, in their order, inside the one
// transaction, and a failed message holds back its group's later
// messages of the batch (batch.ErrHeldBack): they are nacked with it,
// not deleted, so SQS delivers the group again from the failed message
// on, in order, while the other groups of the batch commit and are
// deleted. A message the redrive policy moves to the dead-letter queue
// after maxReceiveCount receives unblocks its group. SQS itself hands a
// group to one receiver at a time (its messages in flight lock it), so
// several Pollers and Workers keep the order.
//
// Run and Close may be called from different goroutines; both are safe to
// call more than once.
type BatchConsumer struct {
	p      BatchFunc
	cfg    SubscriberConfig
	client *sqs.Client
	queue  QueueInfo
	logger watermill.LoggerAdapter
	stats  counters

	mu      sync.Mutex
	started bool
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when Run returns
}

// BatchConsumerStats counts what a [BatchConsumer] did since it was
// created; every count is of messages except Batches.
type BatchConsumerStats struct {
	// Batches and Received count the non-empty ReceiveMessage responses
	// and their messages.
	Batches, Received int64
	// Deleted counts the messages SQS confirmed deleted.
	Deleted int64
	// Stale counts the deletes SQS refused because the lease was lost
	// (another delivery holds the message; the inbox skips it).
	Stale int64
	// DeleteFailed counts the acked messages whose delete failed after
	// every attempt: each is delivered again once its lease lapses, and
	// the inbox acks that copy as a duplicate. Each is logged as an error.
	DeleteFailed int64
	// Nacked counts the messages made visible again after NackDelay;
	// Released those made visible at once, never processed (received while
	// Run was stopping).
	Nacked, Released int64
}

// Stats returns the consumer's counts so far. It is safe to call at any
// time, from any goroutine.
func (bc *BatchConsumer) Stats() BatchConsumerStats {
	s := &bc.stats
	return BatchConsumerStats{
		Batches: s.batches.Load(), Received: s.received.Load(), Deleted: s.deleted.Load(), Stale: s.stale.Load(),
		DeleteFailed: s.deleteFailed.Load(), Nacked: s.nacked.Load(), Released: s.released.Load(),
	}
}

// NewBatchConsumer returns a BatchConsumer of cfg.Queue running p. It
// reads the queue's attributes with ctx and checks them as
// [NewSubscriber] does; Run starts cfg.Pollers receive loops and
// cfg.Workers workers, each with one batch in its transaction at a time.
// Configuration errors wrap "invalid config" and name every bad field at
// once. logger nil means watermill.NopLogger. It starts no goroutine.
func NewBatchConsumer(ctx context.Context, p BatchFunc, cfg *SubscriberConfig, logger watermill.LoggerAdapter) (*BatchConsumer, error) {
	if p == nil {
		return nil, errors.New("invalid config: batch processor is nil")
	}
	c, client, q, err := openQueue(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	logger = logger.With(watermill.LogFields{"queue": q.Name})
	if q.MaxReceiveCount == 0 {
		// Rejected messages are nacked for the redrive policy to move.
		logger.Error("Queue has no redrive policy: a rejected message (no event id, a reused id, a permanent handler error) returns after NackDelay until the queue's retention ends; give the queue a dead-letter queue", nil, nil)
	}
	return &BatchConsumer{
		p: p, cfg: c, client: client, queue: q, logger: logger,
		closing: make(chan struct{}), done: make(chan struct{}),
	}, nil
}

// Queue returns what NewBatchConsumer read about the queue.
func (bc *BatchConsumer) Queue() QueueInfo { return bc.queue }

// received is one ReceiveMessage response on its way to a worker.
type received struct {
	ms []types.Message
	ls []*lease
}

// Run receives and processes batches until ctx ends or Close is called.
// Then it starts no more receives and lets those in flight finish: a
// receive cancelled by the client may still be answered by SQS with
// messages nobody reads, which then stay invisible for the queue's whole
// visibility timeout (aws/aws-sdk-go-v2#2068), so a receive is cancelled
// only if it is still unanswered CloseTimeout after the stop (a long poll
// is answered within WaitTimeSeconds: a CloseTimeout longer than
// WaitTimeSeconds waits for every one). Every batch received after the
// stop, or not yet taken by a worker, is made visible again at once
// (ChangeMessageVisibilityBatch to 0, counted in
// [BatchConsumerStats].Released), never handed out. Meanwhile Run waits
// up to CloseTimeout for the batches in their transactions (their leases
// kept alive), cancels their contexts after that (the transactions roll
// back and the messages are nacked), settles them, sends the deletes and
// visibility changes still pending (all within RequestTimeout: a delete
// not answered by then returns when its lease lapses, and the inbox acks
// it as a duplicate), and returns nil: after at most CloseTimeout +
// RequestTimeout. A second call returns an error at once.
func (bc *BatchConsumer) Run(ctx context.Context) error {
	bc.mu.Lock()
	if bc.started {
		bc.mu.Unlock()
		return errors.New("sqsbroker: BatchConsumer.Run called twice")
	}
	bc.started = true
	bc.mu.Unlock()
	defer close(bc.done)
	// Stopped before it started: no receive is begun, so none is waited for.
	select {
	case <-bc.closing:
		return nil
	case <-ctx.Done():
		return nil
	default:
	}

	stop := make(chan struct{})
	// Receives are not cancelled by the stop, nor by ctx: SQS may answer a
	// long poll that the client gave up with messages that nobody reads,
	// invisible for the queue's whole visibility timeout
	// (aws/aws-sdk-go-v2#2068; fauxqs does the same). A receive in flight
	// at the stop is let finish (a long poll is answered within
	// WaitTimeSeconds) and what it brought is released; only one still
	// unanswered CloseTimeout after the stop is cancelled.
	pollCtx, cancelPoll := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPoll()
	// Batches run on a context detached from ctx, cancelled CloseTimeout
	// after the stop.
	batchCtx, cancelBatches := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBatches()
	leases := newLeases(bc.client, bc.queue.URL, bc.queue.VisibilityTimeout, bc.cfg.HeartbeatInterval, bc.cfg.RequestTimeout, bc.logger)
	leaseCtx, cancelLeases := context.WithCancel(context.WithoutCancel(ctx))
	heartbeatDone := make(chan struct{})
	if bc.cfg.DisableHeartbeat {
		close(heartbeatDone)
	} else {
		go func() {
			defer close(heartbeatDone)
			leases.run(leaseCtx)
		}()
	}
	st := newSettler(bc.client, bc.queue.URL, leases, bc.cfg.RequestTimeout, settleLinger, bc.cfg.Workers, bc.logger, &bc.stats)
	batches := make(chan received)
	var pollers, workers sync.WaitGroup
	for range bc.cfg.Pollers {
		pollers.Go(func() { bc.poll(pollCtx, stop, batches, leases, st) })
	}
	for range bc.cfg.Workers {
		workers.Go(func() { bc.work(batchCtx, stop, batches, leases, st) })
	}
	bc.logger.Info("Batch consumer running", watermill.LogFields{"pollers": bc.cfg.Pollers, "workers": bc.cfg.Workers, "batch_size": bc.cfg.MaxNumberOfMessages})
	workersDone := make(chan struct{})
	go func() {
		workers.Wait()
		close(workersDone)
	}()
	select {
	case <-ctx.Done():
	case <-bc.closing:
	}
	close(stop)
	giveUp := time.AfterFunc(bc.cfg.CloseTimeout, cancelPoll)
	defer giveUp.Stop()
	pollersDone := make(chan struct{})
	go func() {
		pollers.Wait()
		close(pollersDone)
	}()
	drain := time.NewTimer(bc.cfg.CloseTimeout)
	select {
	case <-workersDone:
	case <-drain.C:
		bc.logger.Info("Batches still running after CloseTimeout: cancelled", nil)
		cancelBatches()
		<-workersDone
	}
	drain.Stop()
	// The pollers release what their last receives brought, through st.
	<-pollersDone
	st.close()
	cancelLeases()
	<-heartbeatDone
	return nil
}

// Close stops Run as described there and returns once it returned (at
// once when Run was never called). It always returns nil.
func (bc *BatchConsumer) Close() error {
	bc.mu.Lock()
	select {
	case <-bc.closing:
	default:
		close(bc.closing)
	}
	started := bc.started
	bc.mu.Unlock()
	if started {
		<-bc.done
	}
	return nil
}

// poll is one receive loop: it hands each non-empty response to a worker
// until the stop; a response that comes after the stop is released (made
// visible again at once), never dropped.
func (bc *BatchConsumer) poll(pollCtx context.Context, stop <-chan struct{}, batches chan<- received, leases *leases, st *settler) {
	input := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(bc.queue.URL),
		MaxNumberOfMessages:         int32(bc.cfg.MaxNumberOfMessages),
		WaitTimeSeconds:             int32(bc.cfg.WaitTimeSeconds),
		VisibilityTimeout:           seconds(bc.queue.VisibilityTimeout),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: receiveSystemAttributes,
	}
	for {
		select {
		case <-stop:
			return
		case <-bc.closing:
			// Run has seen or is about to see the stop; no new long poll.
			return
		default:
		}
		out, err := bc.client.ReceiveMessage(pollCtx, input)
		now := time.Now()
		if err != nil {
			if pollCtx.Err() != nil {
				return
			}
			bc.logger.Error("ReceiveMessage failed", err, nil)
			select {
			case <-stop:
				return
			case <-time.After(bc.cfg.ReconnectRetrySleep):
			}
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		bc.stats.batches.Add(1)
		bc.stats.received.Add(int64(len(out.Messages)))
		rb := received{ms: out.Messages, ls: leases.add(out.Messages, now)}
		select {
		case <-stop:
			// Do not start a batch after the stop: release it.
			bc.release(rb, leases, st)
			return
		default:
		}
		select {
		case batches <- rb:
		case <-stop:
			bc.release(rb, leases, st)
			return
		}
	}
}

// work is one worker: it processes the batches the pollers received.
func (bc *BatchConsumer) work(batchCtx context.Context, stop <-chan struct{}, batches <-chan received, leases *leases, st *settler) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		select {
		case <-stop:
			return
		case rb := <-batches:
			bc.process(batchCtx, rb.ms, rb.ls, leases, st)
		}
	}
}

// release makes a received batch that no worker took visible again at
// once.
func (bc *BatchConsumer) release(rb received, leases *leases, st *settler) {
	var remaining atomic.Int32
	remaining.Store(int32(len(rb.ms)))
	reps := make([]*ackReport, len(rb.ms))
	states := make([]leaseState, len(rb.ms))
	items := make([]settleItem, len(rb.ms))
	for i := range rb.ms {
		reps[i] = newReport(bc.queue.Name, &rb.ms[i], len(rb.ms), rb.ls[i].received, leases.deadline(rb.ls[i]))
		states[i] = leases.settle(rb.ls[i])
		items[i] = settleItem{l: rb.ls[i], done: func(r settleResult) {
			reps[i].Outcome = AckReleased
			if r.change == changeOK {
				reps[i].Confirmed = r.at
			}
			bc.stats.released.Add(1)
			if remaining.Add(-1) == 0 {
				bc.observe(reps, states, nil)
			}
		}}
	}
	st.submit(items)
}

// observe settles the Deliveries of one batch and gives them to the
// AckObserver; handedOut[i] tells whether message i was handed to the
// BatchFunc (nil: none was).
func (bc *BatchConsumer) observe(reps []*ackReport, states []leaseState, handedOut []bool) {
	for i, rep := range reps {
		rep.d.Settle(settlement(rep, states[i]))
		// The message is settled: the observer's context carries its Delivery,
		// not a deadline that has nothing left to bound.
		msgCtx := context.Background() //ackgapvet:ignore bgcontext settled already; the context only carries the Delivery to the observer
		if handedOut != nil && handedOut[i] {
			msgCtx = ackgap.WithDelivery(msgCtx, rep.d)
		}
		if obs := bc.cfg.AckObserver; obs != nil {
			obs(msgCtx, rep.d)
		}
	}
}

// process runs one received batch and hands its settles to st.
func (bc *BatchConsumer) process(ctx context.Context, ms []types.Message, ls []*lease, leases *leases, st *settler) {
	reps := make([]*ackReport, len(ms))
	handedOut := make([]bool, len(ms))
	errs := make([]error, len(ms)) // why each message is not acked
	msgs := make([]*message.Message, 0, len(ms))
	idx := make([]int, 0, len(ms))
	ctx, cancel := context.WithTimeout(ctx, bc.cfg.AttemptTimeout)
	defer cancel()
	// On a FIFO queue a message that does not unmarshal holds back the
	// later messages of its group, as the BatchFunc does for a failed one.
	blocked := map[string]string{} // group -> MessageId of its failed message
	for i := range ms {
		m := &ms[i]
		reps[i] = newReport(bc.queue.Name, m, len(ms), ls[i].received, leases.deadline(ls[i]))
		d := reps[i].d
		if first, ok := blocked[d.Key]; d.HasKey && ok {
			errs[i] = fmt.Errorf("held back: message %s of its group failed earlier in this batch", first)
			reps[i].Err = errs[i]
			continue
		}
		msg, err := bc.cfg.Unmarshaler.Unmarshal(m)
		if err != nil {
			errs[i] = err
			reps[i].Err = err
			if d.HasKey {
				blocked[d.Key] = reps[i].MessageID
			}
			continue
		}
		handedOut[i] = true
		msg.SetContext(ackgap.WithDelivery(ctx, reps[i].d))
		reps[i].HandedOut = time.Now()
		msgs = append(msgs, msg)
		idx = append(idx, i)
	}
	// A batch that failed as a whole has every message failed. The
	// BatchFunc returns once the transaction committed or failed: what is
	// acked below may be deleted.
	verdicts := bc.p(ctx, msgs)
	settled := time.Now()
	for j, err := range verdicts {
		// Ack and Nack tell what watches the messages (batch.Config.Trace:
		// telemetry) the processor's verdict; the ackgap.Delivery reports
		// the broker's confirmation after the delete.
		if err != nil {
			errs[idx[j]] = err
			msgs[j].Nack()
			continue
		}
		msgs[j].Ack()
	}
	states := make([]leaseState, len(ms))
	items := make([]settleItem, len(ms))
	var remaining atomic.Int32
	remaining.Store(int32(len(ms)))
	finish := func() {
		if remaining.Add(-1) == 0 {
			bc.observe(reps, states, handedOut)
		}
	}
	for i := range ms {
		states[i] = leases.settle(ls[i])
		reps[i].Settled = settled
		rep := reps[i]
		if errs[i] == nil {
			items[i] = settleItem{l: ls[i], delete: true, done: func(r settleResult) {
				rep.Outcome, rep.Err, rep.Confirmed = r.outcome, r.err, r.at
				switch {
				case r.outcome == AckDeleted && (r.at.After(states[i].deadline) || states[i].lost):
					bc.logger.Info("Deleted after the lease ran out: SQS may deliver the message again, and the inbox will skip it",
						watermill.LogFields{"sqs_message_id": rep.MessageID})
				case r.outcome == AckStale:
					bc.logger.Info("Delete refused the receipt handle: the lease was lost and another delivery holds the message; the inbox skips it",
						watermill.LogFields{"sqs_message_id": rep.MessageID, "event_id": logfield.ID(rep.EventID)})
				}
				finish()
			}}
			continue
		}
		bc.logger.Info("Message not acked; it returns after NackDelay", watermill.LogFields{
			"sqs_message_id": rep.MessageID, "event_id": logfield.ID(rep.EventID), "error": errs[i].Error(),
			"dead_letter_reason": ackgap.ReasonOf(errs[i]),
		})
		items[i] = settleItem{l: ls[i], vt: bc.cfg.NackDelay, done: func(r settleResult) {
			rep.Outcome = AckNacked
			if r.change == changeOK {
				rep.Confirmed = r.at
			}
			bc.stats.nacked.Add(1)
			finish()
		}}
	}
	st.submit(items)
}
