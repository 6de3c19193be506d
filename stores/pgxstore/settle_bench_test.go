package pgxstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// BenchmarkSettleHeld records the outcomes of rows held for direct
// dispatch, rows per statement as the relay's recorder gathers them, and
// reports the PostgreSQL backend's CPU per row and per statement (read
// from /proc, so it needs the server on this machine; 0 otherwise) next
// to the wall time, which includes the commit's WAL flush:
//
//	go test -run x -bench SettleHeld ./stores/pgxstore
func BenchmarkSettleHeld(b *testing.B) {
	for _, n := range []int{10, 40, 100, 400} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			ctx := context.Background()
			pool, schema := testdb.Schema(b, 1) // one connection: one backend to read
			store, err := pgxstore.New(pool, nil)
			require.NoError(b, err)
			_, err = store.Migrate(ctx, &stores.MigrateParams{})
			require.NoError(b, err)
			var pid uint32
			require.NoError(b, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
			hold := time.Now().Add(time.Hour).Truncate(time.Microsecond)
			p := &stores.OutboxSettleParams{Rows: make([]stores.OutboxSettlement, n)}
			var cpu time.Duration
			next := 0
			for b.Loop() {
				b.StopTimer()
				// n fresh held rows, written as direct dispatch writes them.
				_, err := pool.Exec(ctx, `INSERT INTO `+schema+`.ackgap_outbox (kind, idempotency_key, payload, payload_hash, available_at)
SELECT 'charge', 'k-' || i, '\x00', '\x00', $3 FROM generate_series($1::int, $2::int) AS i`, next, next+n-1, hold)
				require.NoError(b, err)
				for i := range p.Rows {
					p.Rows[i] = stores.OutboxSettlement{IdempotencyKey: "k-" + strconv.Itoa(next+i), HeldUntil: hold, State: stores.OutboxDone}
				}
				next += n
				before := backendCPU(pid)
				b.StartTimer()
				res, err := store.SettleOutboxIfClaimedOrHeld(ctx, p)
				b.StopTimer()
				cpu += backendCPU(pid) - before
				require.NoError(b, err)
				for i, ok := range res.Changed {
					require.True(b, ok, "row %d", i)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "backend-µs/stmt")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*n), "backend-µs/row")
		})
	}
}

// backendCPU is the CPU time the process pid has run (/proc/pid/schedstat),
// 0 when it cannot be read.
func backendCPU(pid uint32) time.Duration {
	s, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/schedstat")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(s), " ")
	ns, _ := strconv.ParseInt(f, 10, 64)
	return time.Duration(ns)
}
