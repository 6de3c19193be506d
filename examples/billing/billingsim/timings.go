package billingsim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ackgap/ackgap/telemetry"
)

// Timings are the ack gaps and lease headrooms of one run, read from the
// consumer spans of package telemetry as each one ended (span attributes
// ackgap.ack_gap and ackgap.lease_headroom): exact values, not the
// buckets of the ackgap.ack_gap and ackgap.lease_headroom histograms.
type Timings struct {
	// Broker labels the numbers (BrokerGoChannel, BrokerKafka,
	// BrokerSQS).
	Broker string
	// NoLease says why the broker has no lease ("" when it has one, SQS);
	// LeaseHeadroom is then empty.
	NoLease string
	// Spans counts the consumer spans that ended, one per delivery; Open
	// those still open when the run stopped waiting for them (want 0).
	Spans, Open int
	// Acked counts the deliveries that were acked; Confirmed those whose
	// ack the broker confirmed (Kafka: offset commit returned; SQS:
	// DeleteMessage returned; GoChannel: at the ack); Unconfirmed those it
	// did not (a Kafka offset commit skipped after a rebalance, an SQS
	// delete after the lease lapsed): each is a redelivery to come.
	Acked, Confirmed, Unconfirmed int
	// AckGap is commit -> broker confirmed, in ms, of every delivery that
	// applied (committed) and whose ack the broker confirmed. A duplicate
	// commits nothing, so it has no ack gap.
	AckGap Distribution
	// LeaseHeadroom is lease deadline - broker confirmed, in ms, of every
	// acked delivery with a lease, applied or duplicate (to the failure of
	// the confirmation when the broker refused it). Expired counts the
	// negative ones: already visible again, so a duplicate is coming.
	LeaseHeadroom Distribution
	Expired       int
	// MetricAckGaps and MetricLeaseHeadrooms are the counts of the
	// histograms ackgap.ack_gap and ackgap.lease_headroom, read from the
	// run's MeterProvider at the end: the same measurements as AckGap and
	// LeaseHeadroom, through the metrics.
	MetricAckGaps, MetricLeaseHeadrooms uint64
}

// Distribution is a set of samples in milliseconds. The zero value is
// empty.
type Distribution struct {
	ms []float64 // sorted
}

// newDistribution returns the distribution of ms; it sorts ms in place.
func newDistribution(ms []float64) Distribution {
	slices.Sort(ms)
	return Distribution{ms: ms}
}

// Count returns the number of samples.
func (d Distribution) Count() int { return len(d.ms) }

// Quantile returns the q-quantile (0 < q <= 1) in ms by the nearest-rank
// method: the smallest sample with at least q of the samples at or below
// it. It returns 0 when d is empty.
func (d Distribution) Quantile(q float64) float64 {
	if len(d.ms) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(d.ms))))
	return d.ms[min(max(rank, 1), len(d.ms))-1]
}

// Min returns the smallest sample in ms, 0 when d is empty.
func (d Distribution) Min() float64 {
	if len(d.ms) == 0 {
		return 0
	}
	return d.ms[0]
}

// Max returns the largest sample in ms, 0 when d is empty.
func (d Distribution) Max() float64 { return d.Quantile(1) }

// Samples returns the samples in ms, sorted ascending; the caller must not
// change them.
func (d Distribution) Samples() []float64 { return d.ms }

// percentiles formats p50, p90, p99 and max.
func (d Distribution) percentiles() string {
	return fmt.Sprintf("p50 %s ms, p90 %s ms, p99 %s ms, max %s ms",
		formatMS(d.Quantile(0.5)), formatMS(d.Quantile(0.9)), formatMS(d.Quantile(0.99)), formatMS(d.Max()))
}

// formatMS prints ms with three significant decimals below 10 ms, fewer
// above.
func formatMS(ms float64) string {
	decimals := 0
	switch a := math.Abs(ms); {
	case a < 10:
		decimals = 3
	case a < 100:
		decimals = 2
	case a < 1000:
		decimals = 1
	}
	return strconv.FormatFloat(ms, 'f', decimals, 64)
}

// rows returns the summary rows of t: label and text.
func (t *Timings) rows() [][2]string {
	gap := fmt.Sprintf("no applied delivery was acked and confirmed (%d acked, %d confirmed)", t.Acked, t.Confirmed)
	if t.AckGap.Count() > 0 {
		gap = fmt.Sprintf("%s over %d applied deliveries acked and confirmed (commit -> broker confirmed; %d acked, %d confirmed, %d unconfirmed; a delivery that applied but whose instance crashed before the ack has no ack gap: its redelivery is acked as a duplicate)",
			t.AckGap.percentiles(), t.AckGap.Count(), t.Acked, t.Confirmed, t.Unconfirmed)
	}
	lease := "no lease: " + t.NoLease
	switch {
	case t.NoLease != "":
	case t.LeaseHeadroom.Count() == 0:
		lease = "no delivery was acked"
	default:
		lease = fmt.Sprintf("%s over %d acked deliveries, applied and duplicate (lease deadline - broker confirmed; min %s ms, %d negative: visible again before the ack was confirmed)",
			t.LeaseHeadroom.percentiles(), t.LeaseHeadroom.Count(), formatMS(t.LeaseHeadroom.Min()), t.Expired)
	}
	rows := [][2]string{
		{"ack gap (" + t.Broker + ")", gap},
		{"lease headroom (" + t.Broker + ")", lease},
	}
	if t.Open > 0 {
		rows = append(rows, [2]string{"spans still open", fmt.Sprintf("%d (their deliveries are not counted above)", t.Open)})
	}
	return rows
}

// spanTimings is an OpenTelemetry SpanProcessor that keeps the ack gap and
// lease headroom of every consumer span of package telemetry as it ends.
// It is synchronous and cheap: a lock and a few appends per span.
type spanTimings struct {
	mu                            sync.Mutex
	started, ended                int
	acked, confirmed, unconfirmed int
	expired                       int
	ackGapMS, headroomMS          []float64
}

var _ sdktrace.SpanProcessor = (*spanTimings)(nil)

// isConsumerSpan reports whether s is a consumer span of package
// telemetry (not the relay's effect spans, which it makes too).
func isConsumerSpan(s sdktrace.ReadOnlySpan) bool {
	return s.InstrumentationScope().Name == telemetry.ScopeName && s.SpanKind() == trace.SpanKindConsumer
}

// OnStart counts the consumer spans started, for wait.
func (p *spanTimings) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if !isConsumerSpan(s) {
		return
	}
	p.mu.Lock()
	p.started++
	p.mu.Unlock()
}

// OnEnd reads the span's confirmation, ack gap and lease headroom.
func (p *spanTimings) OnEnd(s sdktrace.ReadOnlySpan) {
	if !isConsumerSpan(s) {
		return
	}
	var confirmation string
	gap, headroom := math.NaN(), math.NaN()
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case telemetry.AttrBrokerConfirmation:
			confirmation = kv.Value.AsString()
		case telemetry.AttrAckGap:
			gap = kv.Value.AsFloat64()
		case telemetry.AttrLeaseHeadroom:
			headroom = kv.Value.AsFloat64()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended++
	switch confirmation {
	case telemetry.ConfirmationConfirmed, telemetry.ConfirmationAtAck:
		p.acked++
		p.confirmed++
	case telemetry.ConfirmationFailed:
		p.acked++
		p.unconfirmed++
	case telemetry.ConfirmationUnobserved:
		p.acked++
	}
	if !math.IsNaN(gap) {
		p.ackGapMS = append(p.ackGapMS, gap*1e3)
	}
	if !math.IsNaN(headroom) {
		p.headroomMS = append(p.headroomMS, headroom*1e3)
		if headroom < 0 {
			p.expired++
		}
	}
}

// Shutdown does nothing: the samples stay readable.
func (p *spanTimings) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing: nothing is buffered.
func (p *spanTimings) ForceFlush(context.Context) error { return nil }

// wait returns once every consumer span started has ended, or after
// timeout; it returns how many are still open.
func (p *spanTimings) wait(ctx context.Context, timeout time.Duration) int {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		p.mu.Lock()
		open := p.started - p.ended
		p.mu.Unlock()
		if open <= 0 {
			return 0
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return open
		case <-ctx.Done():
			return open
		}
	}
}

// timings returns what p has seen so far.
func (p *spanTimings) timings(broker, noLease string) Timings {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Timings{
		Broker: broker, NoLease: noLease,
		Spans: p.ended, Open: p.started - p.ended,
		Acked: p.acked, Confirmed: p.confirmed, Unconfirmed: p.unconfirmed,
		AckGap:        newDistribution(slices.Clone(p.ackGapMS)),
		LeaseHeadroom: newDistribution(slices.Clone(p.headroomMS)),
		Expired:       p.expired,
	}
}
