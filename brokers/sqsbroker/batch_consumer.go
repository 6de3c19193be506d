package sqsbroker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ackgap/ackgap"
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
// database transaction: after the commit it deletes the acked messages
// (applied and duplicate) with one DeleteMessageBatch, and makes the
// others visible again after NackDelay with one
// ChangeMessageVisibilityBatch. It is the batched counterpart of
// [Subscriber] plus a router, with the same lease handling: the queue's
// visibility timeout is checked against AttemptTimeout, which bounds one
// batch, and the heartbeat extends the leases of a batch until it is
// settled.
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
// group to one receiver at a time, so several Workers keep the order.
//
// Run and Close may be called from different goroutines; both are safe to
// call more than once.
type BatchConsumer struct {
	p      BatchFunc
	cfg    SubscriberConfig
	client *sqs.Client
	queue  QueueInfo
	logger watermill.LoggerAdapter

	mu      sync.Mutex
	started bool
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when Run returns
}

// NewBatchConsumer returns a BatchConsumer of cfg.Queue running p. It
// reads the queue's attributes with ctx and checks them as
// [NewSubscriber] does; cfg.Workers receive loops run at once, each with
// one batch in its transaction at a time.
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

// Run receives and processes batches until ctx ends or Close is called.
// Then it stops receiving, waits up to CloseTimeout for the batches in
// their transactions (their leases kept alive), cancels their contexts
// after that (the transactions roll back and the messages return when
// their leases lapse), settles them, and returns nil. A second call
// returns an error at once.
func (bc *BatchConsumer) Run(ctx context.Context) error {
	bc.mu.Lock()
	if bc.started {
		bc.mu.Unlock()
		return errors.New("sqsbroker: BatchConsumer.Run called twice")
	}
	bc.started = true
	bc.mu.Unlock()
	defer close(bc.done)

	stop := make(chan struct{})
	pollCtx, cancelPoll := context.WithCancel(ctx)
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
	var workers sync.WaitGroup
	for range bc.cfg.Workers {
		workers.Go(func() { bc.work(pollCtx, batchCtx, stop, leases) })
	}
	bc.logger.Info("Batch consumer running", watermill.LogFields{"workers": bc.cfg.Workers, "batch_size": bc.cfg.MaxNumberOfMessages})
	workersDone := make(chan struct{})
	go func() {
		workers.Wait()
		close(workersDone)
	}()
	select {
	case <-ctx.Done():
	case <-bc.closing:
	case <-workersDone:
	}
	close(stop)
	cancelPoll()
	drain := time.NewTimer(bc.cfg.CloseTimeout)
	select {
	case <-workersDone:
	case <-drain.C:
		bc.logger.Info("Batches still running after CloseTimeout: cancelled", nil)
		cancelBatches()
		<-workersDone
	}
	drain.Stop()
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

// work is one receive loop.
func (bc *BatchConsumer) work(pollCtx, batchCtx context.Context, stop <-chan struct{}, leases *leases) {
	input := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(bc.queue.URL),
		MaxNumberOfMessages:         int32(bc.cfg.MaxNumberOfMessages),
		WaitTimeSeconds:             int32(bc.cfg.WaitTimeSeconds),
		VisibilityTimeout:           seconds(bc.queue.VisibilityTimeout),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		out, err := bc.client.ReceiveMessage(pollCtx, input)
		received := time.Now()
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
		if len(out.Messages) > 0 {
			bc.process(batchCtx, out.Messages, leases.add(out.Messages, received), leases)
		}
	}
}

// process runs one received batch and settles its messages.
func (bc *BatchConsumer) process(ctx context.Context, ms []types.Message, ls []*lease, leases *leases) {
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
	// A batch that failed as a whole has every message failed.
	verdicts := bc.p(ctx, msgs)
	settled := time.Now()
	for j, err := range verdicts {
		// Ack and Nack tell what watches the messages (batch.Config.Trace:
		// telemetry) the processor's verdict; the ackgap.Delivery reports
		// the broker's confirmation after DeleteMessageBatch.
		if err != nil {
			errs[idx[j]] = err
			msgs[j].Nack()
			continue
		}
		msgs[j].Ack()
	}
	states := make([]leaseState, len(ms))
	var acked, nacked []int
	for i := range ms {
		states[i] = leases.settle(ls[i])
		reps[i].Settled = settled
		if errs[i] == nil {
			acked = append(acked, i)
			continue
		}
		nacked = append(nacked, i)
		bc.logger.Info("Message not acked; it returns after NackDelay", watermill.LogFields{
			"sqs_message_id": reps[i].MessageID, "event_id": reps[i].EventID, "error": errs[i].Error(),
			"dead_letter_reason": ackgap.ReasonOf(errs[i]),
		})
	}
	bc.deleteBatch(ms, acked, reps, states)
	bc.nackBatch(ls, nacked, reps, leases)
	for i := range ms {
		rep := reps[i]
		rep.d.Settle(settlement(rep, states[i]))
		// The message is settled: the observer's context carries its Delivery,
		// not a deadline that has nothing left to bound.
		msgCtx := context.Background() //ackgapvet:ignore bgcontext settled already; the context only carries the Delivery to the observer
		if handedOut[i] {
			msgCtx = ackgap.WithDelivery(msgCtx, rep.d)
		}
		if obs := bc.cfg.AckObserver; obs != nil {
			obs(msgCtx, rep.d)
		}
	}
}

// requestCtx bounds one SQS call; detached from Run's ctx so that a
// settled batch is still deleted during shutdown.
func (bc *BatchConsumer) requestCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), bc.cfg.RequestTimeout)
}

// deleteBatch deletes the acked messages ms[acked], ten per request.
func (bc *BatchConsumer) deleteBatch(ms []types.Message, acked []int, reps []*ackReport, states []leaseState) {
	for start := 0; start < len(acked); start += maxBatchEntries {
		chunk := acked[start:min(start+maxBatchEntries, len(acked))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for j, i := range chunk {
			entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: ms[i].ReceiptHandle}
		}
		ctx, cancel := bc.requestCtx()
		out, err := bc.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(bc.queue.URL), Entries: entries})
		cancel()
		confirmed := time.Now()
		for _, i := range chunk {
			reps[i].Outcome, reps[i].Err = AckFailed, err
		}
		if err != nil {
			bc.logger.Error("DeleteMessageBatch failed; the messages return when their leases lapse and the inbox skips them", err, nil)
			continue
		}
		for _, s := range out.Successful {
			if i, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && i < len(reps) {
				reps[i].Outcome, reps[i].Err, reps[i].Confirmed = AckDeleted, nil, confirmed
				if confirmed.After(states[i].deadline) || states[i].lost {
					bc.logger.Info("Deleted after the lease ran out: SQS may deliver the message again, and the inbox will skip it",
						watermill.LogFields{"sqs_message_id": reps[i].MessageID})
				}
			}
		}
		for _, f := range out.Failed {
			if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && i < len(reps) {
				reps[i].Outcome, reps[i].Err = AckFailed, errors.New(aws.ToString(f.Code)+": "+aws.ToString(f.Message))
				if lostCode(aws.ToString(f.Code)) {
					reps[i].Outcome, reps[i].Err = AckStale, nil
				}
			}
		}
	}
}

// nackBatch makes the messages ls[nacked] visible again after NackDelay,
// ten per request.
func (bc *BatchConsumer) nackBatch(ls []*lease, nacked []int, reps []*ackReport, leases *leases) {
	for start := 0; start < len(nacked); start += maxBatchEntries {
		chunk := nacked[start:min(start+maxBatchEntries, len(nacked))]
		batch := make([]*lease, len(chunk))
		vts := make([]time.Duration, len(chunk))
		for j, i := range chunk {
			batch[j], vts[j] = ls[i], bc.cfg.NackDelay
		}
		ctx, cancel := bc.requestCtx()
		results := leases.changeVisibility(ctx, batch, vts)
		cancel()
		for j, i := range chunk {
			reps[i].Outcome = AckNacked
			if results[j] == changeOK {
				reps[i].Confirmed = time.Now()
			}
		}
	}
}
