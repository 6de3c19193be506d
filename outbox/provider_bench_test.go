package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
)

// BenchmarkRelaySlowProvider drains 2,000 rows on PostgreSQL through an
// effect that answers after 20 ms (a service across a network), at the
// default Concurrency and at the old default of 10, and reports rows/s:
// with 100 calls in flight the provider's latency should no longer bound
// the relay (5,000 rows/s at most), with 10 it does (500 rows/s at most).
//
//	go test -run '^$' -bench RelaySlowProvider -benchtime 1x ./outbox
func BenchmarkRelaySlowProvider(b *testing.B) {
	const rows, latency = 2000, 20 * time.Millisecond
	for _, c := range []struct {
		name        string
		concurrency int
	}{{"concurrency=default", 0}, {"concurrency=10", 10}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				be := pgBackend(b, 16)
				insert(b, be.store, charges(rows)...)
				var done sync.WaitGroup
				done.Add(rows)
				relay, err := outbox.New(be.store, &outbox.Config{
					Effects: map[string]outbox.Effect{"charge": func(ctx context.Context, _ stores.OutboxRow) error {
						select {
						case <-time.After(latency):
							return nil
						case <-ctx.Done():
							return ctx.Err()
						}
					}},
					Concurrency: c.concurrency,
					Observer: func(_ context.Context, rep *outbox.Report) {
						if rep.Outcome == outbox.OutcomeDone {
							done.Done()
						}
					},
				})
				require.NoError(b, err)
				ctx, cancel := context.WithCancel(context.Background())
				ran := make(chan error, 1)
				b.StartTimer()
				start := time.Now()
				go func() { ran <- relay.Run(ctx) }()
				done.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				cancel()
				require.NoError(b, <-ran)
				b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
				b.StartTimer()
			}
		})
	}
}
