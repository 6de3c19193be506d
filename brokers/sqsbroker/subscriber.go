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
	"github.com/ackgap/ackgap/internal/logfield"
)

// abandonGrace is how long a worker still waits for the ack or nack of a
// message whose context it cancelled at the end of CloseTimeout.
const abandonGrace = time.Second

// deleteAttempts is how many times the delete of an acked message is
// tried when it fails for a reason other than a lost lease.
const deleteAttempts = 3

// The values of ackgap.Settlement.Outcome the subscriber and the batch
// consumer report: how they finished with one received message.
const (
	// AckDeleted: acked, and DeleteMessage returned success. When the
	// delete came after the lease deadline ([ackgap.Delivery.LeaseExpired]) SQS
	// may have delivered the message again meanwhile, and a delete with the
	// old receipt handle succeeds without removing the message (SQS
	// DeleteMessage API reference): the copy is a duplicate the inbox
	// absorbs.
	AckDeleted ackgap.SettleOutcome = "deleted"
	// AckStale: acked, and DeleteMessage refused the receipt handle
	// (ReceiptHandleIsInvalid): the lease was lost and another delivery
	// holds the message. Not an error: the inbox absorbs that delivery.
	AckStale ackgap.SettleOutcome = "stale"
	// AckFailed: acked, but DeleteMessage failed (Err says why); the
	// message is delivered again when its lease lapses, and the inbox
	// absorbs it.
	AckFailed ackgap.SettleOutcome = "delete_failed"
	// AckNacked: nacked (or the message did not unmarshal: Err); its
	// visibility was set to NackDelay.
	AckNacked ackgap.SettleOutcome = "nacked"
	// AckReleased: received but never handed out, because the
	// subscription was closing (or, on a FIFO queue, because an earlier
	// message of its group in the batch was nacked); its visibility was
	// set to 0.
	AckReleased ackgap.SettleOutcome = "released"
	// AckAbandoned: still in the handler when CloseTimeout ran out; its
	// context was cancelled and its heartbeat stopped; SQS delivers it
	// again when its lease lapses.
	AckAbandoned ackgap.SettleOutcome = "abandoned"
)

// ackReport is what the subscriber records about one received message
// until it settles its ackgap.Delivery with it (see settle).
type ackReport struct {
	d *ackgap.Delivery
	// HandedOut, Settled (when acked or nacked), Confirmed (when SQS
	// answered the delete or visibility change with success), Outcome and
	// Err become the settlement's HandedOut, At, Answered, Outcome and
	// AdapterErr.
	HandedOut, Settled, Confirmed time.Time
	Outcome                       ackgap.SettleOutcome
	Err                           error
	// MessageID and EventID are d's, for logs.
	MessageID, EventID string
}

// AckObserverFunc receives the ackgap.Delivery of each received message
// once the subscriber settled it (Delivery.Settlement then reports how:
// Outcome, Answered, the lease as last extended, LeaseExtensions,
// LeaseLost, AdapterErr), with its whole timeline (Received, BatchSize,
// the inbox's reports). ctx is the message's context (background for a
// message never handed out).
type AckObserverFunc func(ctx context.Context, d *ackgap.Delivery)

// Subscriber reads one SQS queue for a Watermill router: it implements
// message.Subscriber. See the package doc for its life cycle. It is safe
// for concurrent use; Close is idempotent.
type Subscriber struct {
	cfg    SubscriberConfig
	client *sqs.Client
	queue  QueueInfo
	logger watermill.LoggerAdapter

	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	subs    sync.WaitGroup
}

var _ message.Subscriber = (*Subscriber)(nil)

// NewSubscriber returns a Subscriber for cfg.Queue. It resolves the
// queue's URL and reads its attributes (GetQueueAttributes) with ctx, and
// fails when the queue does not exist (it never creates one: its
// visibility timeout and redrive policy are decisions for whoever owns
// the queue) or its VisibilityTimeout is shorter than
// cfg.VisibilityFactor × cfg.AttemptTimeout. Configuration errors wrap
// "invalid config" and name every bad field at once. logger nil means
// watermill.NopLogger. NewSubscriber starts no goroutine.
func NewSubscriber(ctx context.Context, cfg *SubscriberConfig, logger watermill.LoggerAdapter) (*Subscriber, error) {
	c, client, q, err := openQueue(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	logger = logger.With(watermill.LogFields{"queue": q.Name})
	if q.MaxReceiveCount == 0 {
		logger.Info("Queue has no redrive policy: a message that keeps failing is delivered again until the queue's retention ends", nil)
	}
	return &Subscriber{cfg: c, client: client, queue: q, logger: logger, closing: make(chan struct{})}, nil
}

// openQueue checks cfg (nil: an error), fills in its defaults, creates the
// client and reads the queue's attributes, checking them against cfg; a
// zero HeartbeatInterval becomes the queue's visibility timeout /
// HeartbeatDivisor. Configuration errors wrap "invalid config".
func openQueue(ctx context.Context, cfg *SubscriberConfig) (SubscriberConfig, *sqs.Client, QueueInfo, error) {
	if cfg == nil {
		return SubscriberConfig{}, nil, QueueInfo{}, errors.New("invalid config: SubscriberConfig is nil: Queue is required")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return c, nil, QueueInfo{}, err
	}
	client := sqs.NewFromConfig(c.AWSConfig, withBufferedBodies(c.OptFns)...)
	q, err := describeQueue(ctx, client, c.Queue, c.RequestTimeout)
	if err != nil {
		return c, nil, q, err
	}
	if err := c.validateQueue(q); err != nil {
		return c, nil, q, err
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = q.VisibilityTimeout / HeartbeatDivisor
	}
	return c, client, q, nil
}

// describeQueue resolves queue (a name or URL) and reads its attributes.
func describeQueue(ctx context.Context, client *sqs.Client, queue string, timeout time.Duration) (QueueInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := queue
	if !isQueueURL(queue) {
		out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
		if err != nil {
			return QueueInfo{}, fmt.Errorf("sqsbroker: queue %q: %w", queue, err)
		}
		url = aws.ToString(out.QueueUrl)
	}
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return QueueInfo{}, fmt.Errorf("sqsbroker: queue %q: GetQueueAttributes: %w", queue, err)
	}
	q, err := parseQueueInfo(url, out.Attributes)
	if err != nil {
		return QueueInfo{}, fmt.Errorf("sqsbroker: %w", err)
	}
	return q, nil
}

// Queue returns what NewSubscriber read about the queue.
func (s *Subscriber) Queue() QueueInfo { return s.queue }

// Config returns the effective configuration: defaults filled in, and
// HeartbeatInterval set from the queue.
func (s *Subscriber) Config() SubscriberConfig { return s.cfg }

// Subscribe starts cfg.Workers receive loops on the queue and returns the
// channel they hand messages out on, one message per worker at a time.
// topic must name the subscriber's queue (its name, its URL, or
// SubscriberConfig.Queue). When ctx ends or Close is called, the workers
// start no more receives, let those in flight finish, release (make
// visible again at once) every message not handed out, those a receive
// brought after the stop included, wait up to CloseTimeout for the ones
// handed out, and then the channel is closed. A receive still unanswered
// CloseTimeout after the stop is cancelled: SQS may answer a long poll
// the client gave up with messages nobody reads, which then stay
// invisible for the queue's whole visibility timeout
// (aws/aws-sdk-go-v2#2068), so a CloseTimeout longer than
// WaitTimeSeconds waits for every receive. Messages' contexts are not
// cancelled by ctx, only after CloseTimeout.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if topic != s.cfg.Queue && topic != s.queue.Name && topic != s.queue.URL {
		return nil, fmt.Errorf("sqsbroker: Subscribe(%q): this subscriber reads queue %s only (NewSubscriber checked its lease against that queue)", topic, s.queue.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("sqsbroker: subscriber closed")
	}
	s.subs.Add(1)
	sub := s.newSubscription(ctx)
	sub.start()
	return sub.out, nil
}

// Close stops every subscription as described at Subscribe and returns
// once their channels are closed: after at most CloseTimeout, plus about a
// second (abandonGrace), plus the deletes and visibility changes still
// pending (all within RequestTimeout; a delete not answered by then
// returns when its lease lapses, and the inbox acks it as a duplicate). It
// is safe to call more than once and always returns nil.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	s.subs.Wait()
	return nil
}

// subscription is one Subscribe call.
type subscription struct {
	s      *Subscriber
	logger watermill.LoggerAdapter
	out    chan *message.Message
	leases *leases
	// settler sends the deletes and nacks, coalesced across the workers.
	settler *settler
	stats   counters

	ctx          context.Context // Subscribe's
	msgCtx       context.Context // parent of message contexts: not cancelled by ctx
	pollCtx      context.Context // cancelled CloseTimeout after the stop
	cancelPoll   context.CancelFunc
	stop         chan struct{} // closed when ctx ends or Close is called
	drainExpired chan struct{} // closed CloseTimeout after stop
	workersDone  chan struct{}
}

func (s *Subscriber) newSubscription(ctx context.Context) *subscription {
	// Receives are not cancelled by the stop, nor by ctx, but CloseTimeout
	// after it: see Subscribe.
	pollCtx, cancelPoll := context.WithCancel(context.WithoutCancel(ctx))
	sub := &subscription{
		s: s, logger: s.logger.With(watermill.LogFields{"subscription": watermill.NewShortUUID()}),
		out: make(chan *message.Message),
		ctx: ctx, msgCtx: context.WithoutCancel(ctx), pollCtx: pollCtx, cancelPoll: cancelPoll,
		stop: make(chan struct{}), drainExpired: make(chan struct{}), workersDone: make(chan struct{}),
	}
	sub.leases = newLeases(s.client, s.queue.URL, s.queue.VisibilityTimeout, s.cfg.HeartbeatInterval, s.cfg.RequestTimeout, sub.logger)
	sub.settler = newSettler(s.client, s.queue.URL, sub.leases, s.cfg.RequestTimeout, settleLinger, s.cfg.Workers, sub.logger, &sub.stats)
	return sub
}

func (sub *subscription) start() {
	s := sub.s
	leaseCtx, cancelLeases := context.WithCancel(sub.msgCtx)
	heartbeatDone := make(chan struct{})
	if s.cfg.DisableHeartbeat {
		close(heartbeatDone)
	} else {
		go func() {
			defer close(heartbeatDone)
			sub.leases.run(leaseCtx)
		}()
	}

	// Stop on ctx or Close; start the drain clock.
	go func() {
		select {
		case <-sub.ctx.Done():
		case <-s.closing:
		}
		close(sub.stop)
		t := time.AfterFunc(s.cfg.CloseTimeout, func() {
			close(sub.drainExpired)
			sub.cancelPoll()
		})
		<-sub.workersDone
		t.Stop()
	}()

	var workers sync.WaitGroup
	for range s.cfg.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			sub.work()
		}()
	}
	go func() {
		defer s.subs.Done()
		workers.Wait()
		close(sub.workersDone)
		sub.settler.close() // the deletes and nacks still pending
		cancelLeases()
		<-heartbeatDone
		sub.cancelPoll()
		close(sub.out)
		sub.logger.Debug("Subscription closed", nil)
	}()
	sub.logger.Info("Subscribed to queue", watermill.LogFields{
		"workers": s.cfg.Workers, "visibility_timeout": s.queue.VisibilityTimeout,
		"heartbeat": !s.cfg.DisableHeartbeat, "heartbeat_interval": s.cfg.HeartbeatInterval,
	})
}

func (sub *subscription) stopping() bool {
	select {
	case <-sub.stop:
		return true
	default:
		return false
	}
}

// work is one receive loop.
func (sub *subscription) work() {
	s := sub.s
	input := &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(s.queue.URL),
		MaxNumberOfMessages: int32(s.cfg.MaxNumberOfMessages),
		WaitTimeSeconds:     int32(s.cfg.WaitTimeSeconds),
		// Ask for exactly the visibility the lease accounting assumes.
		VisibilityTimeout:           seconds(s.queue.VisibilityTimeout),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: receiveSystemAttributes,
	}
	for !sub.stopping() {
		out, err := s.client.ReceiveMessage(sub.pollCtx, input)
		received := time.Now()
		if err != nil {
			if sub.pollCtx.Err() != nil {
				return
			}
			sub.logger.Error("ReceiveMessage failed", err, nil)
			select {
			case <-sub.stop:
				return
			case <-time.After(s.cfg.ReconnectRetrySleep):
			}
			continue
		}
		if len(out.Messages) > 0 {
			sub.process(out.Messages, sub.leases.add(out.Messages, received))
		}
	}
}

// process hands out the messages of one batch in order.
func (sub *subscription) process(msgs []types.Message, leases []*lease) {
	// On a FIFO queue a nacked message must not be overtaken by the later
	// messages of its group: they are released, and SQS delivers the group
	// again from the nacked one once its NackDelay passed.
	nackedGroups := map[string]bool{}
	for i := range msgs {
		if sub.stopping() {
			sub.release(msgs[i:], leases[i:], len(msgs))
			return
		}
		group := msgs[i].Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if group != "" && nackedGroups[group] {
			sub.release(msgs[i:i+1], leases[i:i+1], len(msgs))
			continue
		}
		if nacked := sub.handle(&msgs[i], leases[i], len(msgs)); nacked && group != "" {
			nackedGroups[group] = true
		}
	}
}

func (sub *subscription) report(m *types.Message, l *lease, batch int) *ackReport {
	return newReport(sub.s.queue.Name, m, batch, l.received, sub.leases.deadline(l))
}

// receiveSystemAttributes are the system attributes a ReceiveMessage
// asks for: the ones newReport and the Unmarshaler read. Asking for "All"
// made SQS send, and the SDK decode, four or five more per message
// (SenderId, SentTimestamp, ApproximateFirstReceiveTimestamp, and on a FIFO
// queue MessageDeduplicationId and SequenceNumber) that nothing read.
var receiveSystemAttributes = []types.MessageSystemAttributeName{
	types.MessageSystemAttributeNameApproximateReceiveCount,
	types.MessageSystemAttributeNameMessageGroupId,
}

// newReport starts the report of m, received from queue in a batch of
// batch at received, with its lease ending at deadline.
func newReport(queue string, m *types.Message, batch int, received, deadline time.Time) *ackReport {
	n, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	eventID := ""
	if a, ok := m.MessageAttributes[ackgap.MetadataEventIDKey]; ok {
		eventID = aws.ToString(a.StringValue)
	}
	d := &ackgap.Delivery{
		Destination: queue, MessageID: aws.ToString(m.MessageId), EventID: eventID,
		ReceiveCount: n, BatchSize: batch, Received: received,
		LeaseDeadline: deadline, Confirmation: ackgap.ConfirmationReported,
	}
	// On a FIFO queue the message group is the ordering key: package batch
	// applies a group's messages in rounds and holds back the later ones
	// of a failed message.
	if g, ok := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]; ok {
		d.Key, d.HasKey = g, true
	}
	return &ackReport{d: d, MessageID: d.MessageID, EventID: eventID}
}

// observe settles rep's Delivery with rep and st, then gives it to the
// AckObserver.
func (sub *subscription) observe(ctx context.Context, rep *ackReport, st leaseState) {
	rep.d.Settle(settlement(rep, st))
	if obs := sub.s.cfg.AckObserver; obs != nil {
		obs(ctx, rep.d)
	}
}

// handle hands one message out and settles it; it reports whether the
// message was nacked. The delete (after the ack, so after the commit) or
// the nack's visibility change is sent by the settler, coalesced with
// other messages', while the worker goes on to its next message; the
// AckObserver is called once SQS answered.
func (sub *subscription) handle(m *types.Message, l *lease, batch int) (nacked bool) {
	s := sub.s
	rep := sub.report(m, l, batch)
	msg, err := s.cfg.Unmarshaler.Unmarshal(m)
	if err != nil {
		sub.logger.Error("Cannot unmarshal message; it returns after NackDelay until the queue's redrive policy moves it", err,
			watermill.LogFields{"sqs_message_id": rep.MessageID})
		rep.Settled = time.Now()
		st := sub.leases.settle(l)
		rep.Err = err
		sub.nack(l, rep, st, context.Background(), func() {})
		return true
	}
	ctx, cancel := context.WithCancel(sub.msgCtx)
	handedOff := false // cancel is the settle callback's to call
	defer func() {
		if !handedOff {
			cancel()
		}
	}()
	msg.SetContext(ackgap.WithDelivery(ctx, rep.d))

	select {
	case <-sub.stop:
		sub.release([]types.Message{*m}, []*lease{l}, batch)
		return false
	default:
	}
	select {
	case sub.out <- msg:
	case <-sub.stop:
		sub.release([]types.Message{*m}, []*lease{l}, batch)
		return false
	}
	rep.HandedOut = time.Now()

	acked, settled := waitSettled(msg, sub.drainExpired)
	if !settled {
		// CloseTimeout ran out: cancel the handler (the inbox rolls back and
		// the router nacks) and give it a moment.
		cancel()
		acked, settled = waitSettled(msg, time.After(abandonGrace))
	}
	rep.Settled = time.Now()
	st := sub.leases.settle(l)
	switch {
	case !settled:
		rep.Settled = time.Time{}
		rep.Outcome = AckAbandoned
		sub.logger.Info("Message still in the handler after CloseTimeout: abandoned, it returns when its lease lapses",
			watermill.LogFields{"sqs_message_id": rep.MessageID, "lease_deadline": st.deadline})
		sub.observe(msg.Context(), rep, st)
	case acked:
		handedOff = true
		sub.delete(l, rep, st, msg.Context(), cancel)
	default:
		handedOff = true
		sub.nack(l, rep, st, msg.Context(), cancel)
	}
	return settled && !acked
}

// settlement is what the ackgap.Delivery hook reports for rep: a nack (or
// a release), a confirmed ack, or an ack that SQS did not confirm in time;
// with the subscriber's detail (outcome, answer, hand-out, lease).
func settlement(rep *ackReport, st leaseState) ackgap.Settlement {
	s := ackgap.Settlement{
		Acked: rep.Outcome != AckNacked && rep.Outcome != AckAbandoned && rep.Outcome != AckReleased, At: rep.Settled,
		LeaseDeadline: st.deadline, Outcome: rep.Outcome, Answered: rep.Confirmed, HandedOut: rep.HandedOut,
		LeaseExtensions: st.extensions, LeaseLost: st.lost, AdapterErr: rep.Err,
	}
	expired := st.lost || (!rep.Confirmed.IsZero() && rep.Confirmed.After(st.deadline))
	switch {
	case rep.Outcome == AckAbandoned:
		s.At = time.Now()
		s.Err = errors.New("sqsbroker: still in the handler after CloseTimeout; abandoned to the lease")
	case !s.Acked:
	case rep.Outcome == AckDeleted && !expired:
		s.Confirmed = rep.Confirmed
	case rep.Outcome == AckDeleted:
		s.Err = fmt.Errorf("%w: DeleteMessage returned %s after the lease deadline %s; SQS may deliver the message again",
			ackgap.ErrAckNotConfirmed, rep.Confirmed.Sub(st.deadline).Round(time.Millisecond), st.deadline.Format(time.RFC3339Nano))
	case rep.Outcome == AckStale:
		s.Err = fmt.Errorf("%w: DeleteMessage refused the receipt handle: the lease was lost", ackgap.ErrAckNotConfirmed)
	default:
		s.Err = fmt.Errorf("%w: DeleteMessage: %w", ackgap.ErrAckNotConfirmed, rep.Err)
	}
	return s
}

// waitSettled waits for msg's ack or nack, or for giveUp.
func waitSettled[T any](msg *message.Message, giveUp <-chan T) (acked, settled bool) {
	select {
	case <-msg.Acked():
		return true, true
	case <-msg.Nacked():
		return false, true
	case <-giveUp:
		// An ack or nack may have raced with giveUp.
		select {
		case <-msg.Acked():
			return true, true
		case <-msg.Nacked():
			return false, true
		default:
			return false, false
		}
	}
}

// delete hands an acked message's delete to the settler; once SQS
// answered, it settles rep and calls the AckObserver with ctx, then
// after.
func (sub *subscription) delete(l *lease, rep *ackReport, st leaseState, ctx context.Context, after func()) {
	sub.settler.submit([]settleItem{{l: l, delete: true, done: func(r settleResult) {
		rep.Outcome, rep.Err, rep.Confirmed = r.outcome, r.err, r.at
		fields := watermill.LogFields{"sqs_message_id": rep.MessageID, "event_id": logfield.ID(rep.EventID), "lease_deadline": st.deadline}
		switch {
		case r.outcome == AckDeleted && (r.at.After(st.deadline) || st.lost):
			sub.logger.Info("Deleted after the lease ran out: SQS may deliver the message again, and the inbox will skip it", fields)
		case r.outcome == AckStale:
			sub.logger.Info("Delete refused the receipt handle: the lease was lost and another delivery holds the message; the inbox skips it", fields)
		}
		sub.observe(ctx, rep, st)
		after()
	}}})
}

// errNackNotAnswered is the AdapterErr of a nack whose visibility change
// failed (logged with SQS's error).
var errNackNotAnswered = errors.New("sqsbroker: the nack's ChangeMessageVisibility failed; the message returns when its lease lapses")

// nack hands a nacked message's visibility change (NackDelay) to the
// settler; once SQS answered, it settles rep and calls the AckObserver
// with ctx, then after.
func (sub *subscription) nack(l *lease, rep *ackReport, st leaseState, ctx context.Context, after func()) {
	rep.Outcome = AckNacked
	sub.settler.submit([]settleItem{{l: l, vt: sub.s.cfg.NackDelay, done: func(r settleResult) {
		switch r.change {
		case changeOK:
			rep.Confirmed = r.at
		case changeLost:
			// Already visible again: nothing to shorten.
		default:
			if rep.Err == nil {
				rep.Err = errNackNotAnswered
			}
		}
		sub.observe(ctx, rep, st)
		after()
	}}})
}

// requestCtx bounds one SQS call; it is detached from Subscribe's ctx so
// that messages are still released during shutdown.
func (sub *subscription) requestCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(sub.msgCtx, sub.s.cfg.RequestTimeout)
}

// release makes messages that were never handed out visible at once.
func (sub *subscription) release(msgs []types.Message, leases []*lease, batch int) {
	states := make([]leaseState, len(leases))
	for i, l := range leases {
		states[i] = sub.leases.settle(l)
	}
	for start := 0; start < len(leases); start += maxBatchEntries {
		end := min(start+maxBatchEntries, len(leases))
		zero := make([]time.Duration, end-start)
		ctx, cancel := sub.requestCtx()
		results := sub.leases.changeVisibility(ctx, leases[start:end], zero)
		cancel()
		for i := start; i < end; i++ {
			rep := sub.report(&msgs[i], leases[i], batch)
			rep.Outcome = AckReleased
			if results[i-start] == changeOK {
				rep.Confirmed = time.Now()
			}
			sub.observe(context.Background(), rep, states[i])
		}
	}
}
