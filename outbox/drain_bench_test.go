package outbox_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
)

// Sizes of BenchmarkRelayDrainLargeOutbox (issue 12 item 5).
const (
	drainBacklog = 100_000
	drainDone    = 1_000_000
)

// envLargeOutbox enables BenchmarkRelayDrainLargeOutbox: it writes 1.1
// million rows (about 0.5 GB with their dead versions), so `go test -bench
// .` alone does not run it.
const envLargeOutbox = "ACKGAP_BENCH_LARGE_OUTBOX"

// timedClaims times every ClaimOutbox call of a relay.
type timedClaims struct {
	stores.OutboxStore
	mu    sync.Mutex
	times []time.Duration
}

func (c *timedClaims) ClaimOutbox(ctx context.Context, p *stores.OutboxClaimParams) (*stores.OutboxClaimResult, error) {
	start := time.Now()
	res, err := c.OutboxStore.ClaimOutbox(ctx, p)
	c.mu.Lock()
	c.times = append(c.times, time.Since(start))
	c.mu.Unlock()
	return res, err
}

// BenchmarkRelayDrainLargeOutbox drains a backlog of 100,000 pending rows
// that sit beside 1,000,000 done rows on PostgreSQL, as a relay finds an
// outbox after a long busy run: the done rows were written pending and then
// updated to done in one go, so their dead versions are still in the table
// and its indexes (no vacuum has run). The effect returns at once, so the
// relay's own database work is what is measured. It reports the drain rate
// (rows/s), the claim statement's time (mean and p99 over the drain) and the
// claim query's plan before the drain (in the log, with -v).
//
//	ACKGAP_BENCH_LARGE_OUTBOX=1 go test -run '^$' -bench RelayDrainLargeOutbox -benchtime 1x -v ./outbox
func BenchmarkRelayDrainLargeOutbox(b *testing.B) {
	if os.Getenv(envLargeOutbox) == "" {
		b.Skipf("set %s=1 to run: it writes 1.1 million rows", envLargeOutbox)
	}
	for b.Loop() {
		b.StopTimer()
		be := pgBackend(b, 16)
		ctx := context.Background()
		const table = "ackgap_outbox" // pgxstore's default name, in the test's schema (search_path)
		fill(b, be, table)
		// The first scan walks the dead index entries the done rows left
		// and marks them killed; the second shows the claim after that.
		explainClaim(b, be, table, "first claim")
		explainClaim(b, be, table, "second claim")
		timed := &timedClaims{OutboxStore: outbox.PollOnly(be.store)}
		var done sync.WaitGroup
		done.Add(drainBacklog)
		relay, err := outbox.New(timed, &outbox.Config{
			Effects: map[string]outbox.Effect{"charge": func(context.Context, stores.OutboxRow) error { return nil }},
			Observer: func(_ context.Context, rep *outbox.Report) {
				if rep.Outcome == outbox.OutcomeDone {
					done.Done()
				}
			},
			PruneInterval: time.Hour, DoneRetention: 24 * time.Hour,
		})
		require.NoError(b, err)
		rctx, cancel := context.WithCancel(ctx)
		ran := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() { ran <- relay.Run(rctx) }()
		done.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		cancel()
		require.NoError(b, <-ran)
		require.Zero(b, backlog(b, be.store))

		slices.Sort(timed.times)
		var sum time.Duration
		for _, d := range timed.times {
			sum += d
		}
		n := len(timed.times)
		b.ReportMetric(float64(drainBacklog)/elapsed.Seconds(), "rows/s")
		b.ReportMetric(float64(sum.Microseconds())/1000/float64(n), "claim-ms")
		b.ReportMetric(float64(timed.times[n*99/100].Microseconds())/1000, "claim-p99-ms")
		b.ReportMetric(float64(timed.times[n-1].Microseconds())/1000, "claim-max-ms")
		b.ReportMetric(float64(n), "claims")
		b.Logf("drained %d rows in %s (%.0f rows/s), %d claims", drainBacklog, elapsed.Round(time.Millisecond), float64(drainBacklog)/elapsed.Seconds(), n)
		b.StartTimer()
	}
}

// fill writes the done rows (pending first, then updated to done, leaving
// their dead versions), then the backlog, due in creation order.
func fill(b *testing.B, be *backend[pgx.Tx], table string) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for _, q := range []string{
		`INSERT INTO ` + table + ` (kind, idempotency_key, payload, payload_hash, headers, created_at, available_at)
SELECT 'charge', 'done:' || g, convert_to('{"order":"o' || g || '","amount_cents":100}', 'UTF8'), '\x00', '{"content-type":"application/json"}',
    now() - interval '2 hours', now() - interval '2 hours' FROM generate_series(1, ` + strconv.Itoa(drainDone) + `) g`,
		`UPDATE ` + table + ` SET state = 'done', attempts = 1, done_at = now() - interval '1 hour' WHERE state = 'pending'`,
		`INSERT INTO ` + table + ` (kind, idempotency_key, payload, payload_hash, headers, created_at, available_at)
SELECT 'charge', 'backlog:' || g, convert_to('{"order":"o' || g || '","amount_cents":100}', 'UTF8'), '\x00', '{"content-type":"application/json"}',
    now() - interval '10 minutes', now() - interval '10 minutes' + g * interval '1 microsecond' FROM generate_series(1, ` + strconv.Itoa(drainBacklog) + `) g`,
		`ANALYZE ` + table,
	} {
		_, err := be.pool.Exec(ctx, q)
		require.NoError(b, err)
	}
	b.Logf("fixture: %d done rows (with their dead pending versions) and %d pending rows in %s", drainDone, drainBacklog, time.Since(start).Round(time.Second))
}

// explainClaim logs the plan of the relay's claim statement, run in a
// transaction that is rolled back.
func explainClaim(b *testing.B, be *backend[pgx.Tx], table, what string) {
	b.Helper()
	ctx := context.Background()
	tx, err := be.pool.Begin(ctx)
	require.NoError(b, err)
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) WITH due AS (
    SELECT id FROM `+table+`
    WHERE state IN ('pending', 'claimed') AND available_at <= now()
      AND kind = ANY('{charge}'::text[])
    ORDER BY available_at, id
    LIMIT 100
    FOR UPDATE SKIP LOCKED
)
UPDATE `+table+` AS o SET state = 'claimed', attempts = o.attempts + 1, claim_token = 'x',
    claimed_until = now() + interval '1 minute', available_at = now() + interval '1 minute'
WHERE o.id = ANY(ARRAY(SELECT id FROM due)) RETURNING o.id`)
	require.NoError(b, err)
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(b, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(b, rows.Err())
	b.Logf("%s, plan:\n%s", what, strings.Join(plan, "\n"))
}
