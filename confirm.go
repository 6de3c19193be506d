package ackgap

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrAckNotConfirmed: the message was acked, but its broker adapter could
// not get the broker to confirm it (a Kafka partition revoked before the
// offset commit, a subscriber stopped, an SQS DeleteMessage that failed or
// came after the receipt handle expired). The broker will deliver the
// message again; the inbox will skip it as a duplicate. Adapters wrap it
// with the reason.
var ErrAckNotConfirmed = errors.New("ackgap: broker did not confirm the ack")

// ConfirmationMode says whether a broker adapter can tell when the broker
// confirmed an ack.
type ConfirmationMode int

const (
	// ConfirmationUnobserved (the zero value): the adapter cannot see the
	// broker confirm an ack, and nobody calls Settle. Observers fall back to
	// the ack itself and say so (package telemetry sets
	// ackgap.broker_confirmation to "unobserved").
	ConfirmationUnobserved ConfirmationMode = iota
	// ConfirmationReported: the adapter calls [Delivery.Settle] exactly once
	// for the delivery, with the ack or nack time and, for an ack, when the
	// broker confirmed it (or why it did not).
	ConfirmationReported
	// ConfirmationAtAck: the ack is the broker's confirmation, as in an
	// in-process broker (GoChannel): there is no further step that can
	// fail. Nobody calls Settle; observers take the ack time as the
	// confirmation time.
	ConfirmationAtAck
)

// String returns "unobserved", "reported" or "at_ack".
func (m ConfirmationMode) String() string {
	switch m {
	case ConfirmationReported:
		return "reported"
	case ConfirmationAtAck:
		return "at_ack"
	default:
		return "unobserved"
	}
}

// Settlement is how one delivery ended, as its broker adapter saw it.
type Settlement struct {
	// Acked is true when the message was acked, false when it was nacked or
	// given up (Err then says why it was given up).
	Acked bool
	// At is when the adapter saw the ack or nack (or gave up).
	At time.Time
	// Confirmed is when the broker confirmed the ack: Kafka, the offset
	// commit carrying the message returned (with interval commits, the
	// first periodic commit after the ack); SQS, DeleteMessage returned.
	// Zero for a nack and when Err is set.
	Confirmed time.Time
	// LeaseDeadline, when not zero, replaces Delivery.LeaseDeadline: the
	// lease as last extended (SQS visibility heartbeat).
	LeaseDeadline time.Time
	// Err is set when an acked message was not confirmed (it wraps
	// [ErrAckNotConfirmed]) or a message was given up without an ack or
	// nack (a subscriber stopped).
	Err error

	// The adapter's detail, where it has it (SQS); zero otherwise.

	// Outcome is the adapter's word for how it finished with the message
	// (sqsbroker.AckDeleted, AckStale, AckFailed, AckNacked, AckReleased,
	// AckAbandoned); "" when the adapter has none.
	Outcome SettleOutcome
	// Answered is when the broker answered the settling request with
	// success, in time or not: the delete of an ack (even after the lease
	// deadline, when Confirmed stays zero), the visibility change of a
	// nack or a release. Zero when it did not answer with success.
	Answered time.Time
	// HandedOut is when the handler got the message (the router took it
	// from the subscriber); zero if it never did.
	HandedOut time.Time
	// LeaseExtensions counts the successful extensions of the lease (SQS
	// visibility heartbeat); LeaseLost is true when the broker refused one:
	// the message was visible again by then.
	LeaseExtensions int
	LeaseLost       bool
	// AdapterErr is the adapter's own failure with the message, when
	// there is one besides Err: it did not unmarshal, the nack's
	// visibility change or the delete failed.
	AdapterErr error
}

// SettleOutcome is a broker adapter's word for how it finished with a
// message (see [Settlement.Outcome]).
type SettleOutcome string

// Delivery is one copy of a message as a consumer received it, and its
// one timeline: what the broker adapter knows about the copy (partition,
// offset, lease), what the inbox did on each attempt ([InboxReport], via
// [Delivery.RecordInbox]) and how the broker settled it ([Settlement]:
// ack or nack, and when the broker confirmed the ack). It is carried in
// the message context ([WithDelivery], [DeliveryFromContext]); "delivery"
// means this everywhere in ackgap.
//
// It is the one hook between broker adapters, the inbox and observers
// (package telemetry reads everything from it): none of them imports the
// others. The adapter fills the exported fields before it hands the
// message out and does not change them afterwards; they are read on the
// handler's goroutine. An observer that finds no Delivery in a message's
// context (a subscriber that does not fill the hook) puts a zero one there
// (ConfirmationUnobserved) before the inbox runs. RecordInbox, Inbox,
// Settle and OnSettled are safe for concurrent use. A Delivery must not be
// copied after first use.
//
// The adapter puts a [Delivery] in the message context before it hands
// the message out:
//
//	d := &ackgap.Delivery{Partition: p, Offset: o, HasOffset: true, Confirmation: ackgap.ConfirmationReported}
//	msg.SetContext(ackgap.WithDelivery(msg.Context(), d))
//
// and, with ConfirmationReported, calls [Delivery.Settle] exactly once when
// the message is settled: nacked, acked and confirmed by the broker (Kafka:
// the offset commit carrying the message returned; SQS: DeleteMessage
// returned), acked but not confirmed (an error wrapping
// [ErrAckNotConfirmed]), or given up. An observer registers with
// [Delivery.OnSettled].
//
// What each adapter fills:
//
//   - Kafka (brokers/kafkabroker): ConsumerGroup, Destination (the
//     topic), Partition, Offset, HasOffset, Key (the record key), HasKey,
//     Received; Confirmed is the return of the offset commit carrying the
//     message (per-ack or periodic).
//   - SQS (brokers/sqsbroker, the subscriber and the batch consumer):
//     Destination (the queue), MessageID (the SQS MessageId), EventID,
//     ReceiveCount (ApproximateReceiveCount), Received, BatchSize,
//     LeaseDeadline (receive time plus the visibility timeout); Settle
//     with Confirmed when DeleteMessage (or its batch entry) returned
//     successfully within the lease, Settlement.LeaseDeadline as last
//     extended by the heartbeat, an error wrapping ErrAckNotConfirmed when
//     the delete failed, came late or the receipt handle had expired, and
//     the detail: Outcome (sqsbroker.AckDeleted, ...), Answered,
//     HandedOut, LeaseExtensions, LeaseLost, AdapterErr. Messages never
//     handed out (released, not unmarshalled) are settled too, for
//     sqsbroker.SubscriberConfig.AckObserver.
//   - GoChannel (brokers/gochannelbroker): Confirmation ConfirmationAtAck
//     and nothing else: the ack is final.
type Delivery struct {
	// ConsumerGroup is the broker's consumer group (Kafka group id), ""
	// when the broker has none (SQS, where the queue is the group;
	// GoChannel).
	ConsumerGroup string
	// MessageID is the broker's id of this copy (SQS MessageId); "" means
	// observers use the Watermill message UUID. It is never the dedupe
	// key (docs/design.md invariant 5).
	MessageID string
	// Partition and Offset locate a Kafka record; HasOffset is false for
	// brokers without them.
	Partition int32
	Offset    int64
	HasOffset bool
	// Watermark is the partition's watermark as the engine knew it when it
	// handed this copy out: the lowest offset of the partition not yet
	// acked, so every record below it was acked after its transaction
	// committed (<= Offset). HasWatermark is false when the engine does
	// not track one (kafkabroker: without SubscriberConfig.Progress). The
	// inbox writes it, with Destination and Partition, as the consumer's
	// progress row inside the handler's transaction (stores.Progress), and
	// kafkabroker.SubscriberConfig.Progress starts a partition from it
	// after a database failover or restore.
	Watermark    int64
	HasWatermark bool
	// Key is the broker's ordering key of the copy: the messages of one
	// key are delivered in order (Kafka: the record key, "" for a record
	// without one, which shares the empty key; SQS FIFO: the
	// MessageGroupId). HasKey is false for
	// brokers without ordering keys (SQS standard queues, GoChannel), and
	// then each message is its own key. batch.Processor reads it: it
	// applies the messages of one key in a batch one round after another,
	// and a BatchHandler call never holds two of one key.
	Key    string
	HasKey bool
	// ReceiveCount is the broker's count of deliveries of this message,
	// this one included (SQS ApproximateReceiveCount); 0 when the broker
	// does not count (Kafka, GoChannel).
	ReceiveCount int
	// LeaseDeadline is when the broker gives the message to another
	// consumer unless it was acked by then (SQS: receive time plus the
	// visibility timeout). Zero when the broker has no lease (Kafka: a
	// partition stays with its member until a rebalance; GoChannel).
	LeaseDeadline time.Time
	// Confirmation says whether the adapter reports settlement through
	// Settle. Default ConfirmationUnobserved.
	Confirmation ConfirmationMode
	// Destination is the queue or topic the copy came from; "" when the
	// adapter does not fill it.
	Destination string
	// EventID is the event id as the adapter read it from the message's
	// attributes or headers, before any unmarshalling ("" when none, or
	// not read): the inbox's reports carry the one it checked.
	EventID string
	// Received is when the adapter received the copy from the broker
	// (zero when it does not fill it); BatchSize how many copies the
	// broker returned with it (0 when it does not batch).
	Received  time.Time
	BatchSize int

	mu      sync.Mutex
	inbox   []InboxReport
	settled bool
	result  Settlement
	fn      func(Settlement)   // the first registration, the common case
	more    []func(Settlement) // later registrations
}

// Settle records how the delivery ended and calls every function
// registered with OnSettled, in order, on the caller's goroutine (they
// must not block). The first call wins; later calls return false and do
// nothing. Adapters with Confirmation == ConfirmationReported call it
// exactly once per message they handed out, nack and give-up included.
func (d *Delivery) Settle(s Settlement) bool {
	d.mu.Lock()
	if d.settled {
		d.mu.Unlock()
		return false
	}
	d.settled, d.result = true, s
	fn, more := d.fn, d.more
	d.fn, d.more = nil, nil
	d.mu.Unlock()
	if fn != nil {
		fn(s)
	}
	for _, f := range more {
		f(s)
	}
	return true
}

// OnSettled registers fn to be called once with the delivery's
// [Settlement]: at once, on the caller's goroutine, if it is already
// settled, otherwise on the goroutine that calls Settle. It returns false,
// and never calls fn, when d.Confirmation is not ConfirmationReported:
// nobody will settle d.
func (d *Delivery) OnSettled(fn func(Settlement)) bool {
	if d.Confirmation != ConfirmationReported {
		return false
	}
	d.mu.Lock()
	if d.settled {
		s := d.result
		d.mu.Unlock()
		fn(s)
		return true
	}
	if d.fn == nil {
		d.fn = fn
	} else {
		d.more = append(d.more, fn)
	}
	d.mu.Unlock()
	return true
}

// Settlement returns how d was settled, and false until it is.
func (d *Delivery) Settlement() (Settlement, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.result, d.settled
}

// LeaseHeadroom is the lease deadline (as last extended) minus the time
// the broker answered the settling request ([Settlement.Answered]): how
// much lease was left when the broker confirmed the delete. Negative means
// the message was visible again before: a duplicate delivery may be under
// way. It is 0 before the settlement, when nothing was answered, or when
// the broker has no lease.
func (d *Delivery) LeaseHeadroom() time.Duration {
	s, ok := d.Settlement()
	lease := s.LeaseDeadline
	if lease.IsZero() {
		lease = d.LeaseDeadline
	}
	if !ok || s.Answered.IsZero() || lease.IsZero() {
		return 0
	}
	return lease.Sub(s.Answered)
}

// LeaseExpired reports whether the lease ran out before the adapter was
// done with the message: an extension was refused, or the settling
// request was answered after the lease deadline.
func (d *Delivery) LeaseExpired() bool {
	s, ok := d.Settlement()
	if !ok {
		return false
	}
	return s.LeaseLost || d.LeaseHeadroom() < 0
}

type deliveryKey struct{}

// WithDelivery returns a copy of ctx carrying d; broker adapters call it
// on each message's context before handing the message out.
func WithDelivery(ctx context.Context, d *Delivery) context.Context {
	return context.WithValue(ctx, deliveryKey{}, d)
}

// DeliveryFromContext returns the [Delivery] a broker adapter put in ctx
// (a message context, or one derived from it), and false when there is
// none: the adapter does not fill the hook.
func DeliveryFromContext(ctx context.Context) (*Delivery, bool) {
	d, ok := ctx.Value(deliveryKey{}).(*Delivery)
	return d, ok && d != nil
}

// LeaseDeadlineFromContext returns the lease deadline of the message whose
// context is ctx (Delivery.LeaseDeadline), and false when its adapter
// reports none.
func LeaseDeadlineFromContext(ctx context.Context) (time.Time, bool) {
	d, ok := DeliveryFromContext(ctx)
	if !ok || d.LeaseDeadline.IsZero() {
		return time.Time{}, false
	}
	return d.LeaseDeadline, true
}
