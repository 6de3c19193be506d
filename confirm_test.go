package ackgap_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
)

func TestDeliverySettleOnce(t *testing.T) {
	t.Parallel()
	d := &ackgap.Delivery{Confirmation: ackgap.ConfirmationReported}
	var got []ackgap.Settlement
	require.True(t, d.OnSettled(func(s ackgap.Settlement) { got = append(got, s) }))
	require.True(t, d.OnSettled(func(s ackgap.Settlement) { got = append(got, s) }))
	at := time.Now()
	first := ackgap.Settlement{Acked: true, At: at, Confirmed: at.Add(time.Millisecond)}
	require.True(t, d.Settle(first))
	require.False(t, d.Settle(ackgap.Settlement{At: at}), "the first settlement wins")
	require.Equal(t, []ackgap.Settlement{first, first}, got)

	// A late registration sees the settlement at once.
	var late ackgap.Settlement
	require.True(t, d.OnSettled(func(s ackgap.Settlement) { late = s }))
	require.Equal(t, first, late)
}

func TestDeliveryNotReported(t *testing.T) {
	t.Parallel()
	for _, mode := range []ackgap.ConfirmationMode{ackgap.ConfirmationUnobserved, ackgap.ConfirmationAtAck} {
		d := &ackgap.Delivery{Confirmation: mode}
		require.False(t, d.OnSettled(func(ackgap.Settlement) { t.Error("called") }), mode.String())
	}
	require.Equal(t, "unobserved", ackgap.ConfirmationUnobserved.String())
	require.Equal(t, "reported", ackgap.ConfirmationReported.String())
	require.Equal(t, "at_ack", ackgap.ConfirmationAtAck.String())
}

func TestDeliveryConcurrent(t *testing.T) {
	t.Parallel()
	d := &ackgap.Delivery{Confirmation: ackgap.ConfirmationReported}
	var mu sync.Mutex
	calls := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			d.OnSettled(func(ackgap.Settlement) { mu.Lock(); calls++; mu.Unlock() })
		})
		wg.Go(func() { d.Settle(ackgap.Settlement{Acked: true, At: time.Now()}) })
	}
	wg.Wait()
	require.Equal(t, 8, calls, "every registration is called exactly once")
}

func TestDeliveryContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, ok := ackgap.DeliveryFromContext(ctx)
	require.False(t, ok)
	_, ok = ackgap.LeaseDeadlineFromContext(ctx)
	require.False(t, ok)

	deadline := time.Now().Add(30 * time.Second)
	d := &ackgap.Delivery{Partition: 3, Offset: 42, HasOffset: true, LeaseDeadline: deadline}
	ctx = ackgap.WithDelivery(ctx, d)
	got, ok := ackgap.DeliveryFromContext(context.WithoutCancel(ctx))
	require.True(t, ok)
	require.Same(t, d, got)
	lease, ok := ackgap.LeaseDeadlineFromContext(ctx)
	require.True(t, ok)
	require.Equal(t, deadline, lease)

	_, ok = ackgap.LeaseDeadlineFromContext(ackgap.WithDelivery(context.Background(), &ackgap.Delivery{}))
	require.False(t, ok, "no lease")
	_, ok = ackgap.DeliveryFromContext(ackgap.WithDelivery(context.Background(), nil))
	require.False(t, ok, "a nil delivery is none")
}

// TestDeliveryTimeline: the inbox's reports and the settlement land on one
// record, in order, and Inbox returns copies.
func TestDeliveryTimeline(t *testing.T) {
	d := &ackgap.Delivery{Confirmation: ackgap.ConfirmationReported}
	d.RecordInbox(&ackgap.InboxReport{Consumer: "billing", EventID: "E1", Outcome: ackgap.OutcomeFailed})
	d.RecordInbox(&ackgap.InboxReport{Consumer: "billing", EventID: "E1", Outcome: ackgap.OutcomeApplied})
	got := d.Inbox()
	require.Len(t, got, 2)
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed, ackgap.OutcomeApplied}, []ackgap.Outcome{got[0].Outcome, got[1].Outcome})
	got[0].Outcome = ackgap.OutcomeDuplicate
	require.Equal(t, ackgap.OutcomeFailed, d.Inbox()[0].Outcome, "Inbox returns copies")

	var settled ackgap.Settlement
	require.True(t, d.OnSettled(func(s ackgap.Settlement) { settled = s }))
	require.True(t, d.Settle(ackgap.Settlement{Acked: true}))
	require.True(t, settled.Acked)
	require.Len(t, d.Inbox(), 2, "settling keeps the inbox's part of the timeline")
}
