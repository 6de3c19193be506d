package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// apiCalls counts the SQS requests that leave this process, by operation
// (the X-Amz-Target of the JSON protocol, "AmazonSQS.ReceiveMessage"),
// retries included: every request is one HTTP round trip to the queue.
type apiCalls struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]*atomic.Int64
}

func newAPICalls(next http.RoundTripper) *apiCalls {
	return &apiCalls{next: next, n: map[string]*atomic.Int64{}}
}

// RoundTrip counts req and sends it on.
func (c *apiCalls) RoundTrip(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	if op == "" {
		op = "other"
	}
	c.mu.Lock()
	n, ok := c.n[op]
	if !ok {
		n = new(atomic.Int64)
		c.n[op] = n
	}
	c.mu.Unlock()
	n.Add(1)
	return c.next.RoundTrip(req)
}

// snapshot returns the counts so far.
func (c *apiCalls) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.n))
	for op, n := range c.n {
		out[op] = n.Load()
	}
	return out
}

// callsSince returns after - before per operation, the zero ones left out.
func callsSince(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for op, n := range after {
		if d := n - before[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

// sqsOps are the operations the calls column shows, in its order.
var sqsOps = []string{"ReceiveMessage", "DeleteMessageBatch", "ChangeMessageVisibilityBatch", "ChangeMessageVisibility", "DeleteMessage"}

// sortedOps returns the operations of calls: sqsOps first, then the rest
// by name.
func sortedOps(calls map[string]int64) []string {
	var rest []string
	for op := range calls {
		if !slices.Contains(sqsOps, op) {
			rest = append(rest, op)
		}
	}
	slices.Sort(rest)
	var out []string
	for _, op := range sqsOps {
		if calls[op] != 0 {
			out = append(out, op)
		}
	}
	return append(out, rest...)
}

// sqlCalls is a pgx tracer that counts a pool's round trips to the
// database: every query (Exec, Query, QueryRow, Begin and Commit among
// them), every batch (one round trip for all its statements) and every
// COPY.
type sqlCalls struct{ queries, batches, batched, copies atomic.Int64 }

var (
	_ pgx.QueryTracer    = (*sqlCalls)(nil)
	_ pgx.BatchTracer    = (*sqlCalls)(nil)
	_ pgx.CopyFromTracer = (*sqlCalls)(nil)
)

func (s *sqlCalls) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if debugSQL {
		fmt.Fprintf(os.Stderr, "SQL %p query: %.90q\n", s, d.SQL)
	}
	s.queries.Add(1)
	return ctx
}
func (*sqlCalls) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (s *sqlCalls) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	if debugSQL {
		fmt.Fprintf(os.Stderr, "SQL %p batch\n", s)
	}
	s.batches.Add(1)
	return ctx
}
func (s *sqlCalls) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	s.batched.Add(1)
	if debugSQL {
		fmt.Fprintf(os.Stderr, "SQL %p   batched: %.90q\n", s, d.SQL)
	}
}
func (*sqlCalls) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (s *sqlCalls) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	s.copies.Add(1)
	return ctx
}
func (*sqlCalls) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// statements is the count of statements so far, each of a batch
// counted; nil counts nothing.
func (s *sqlCalls) statements() int64 {
	if s == nil {
		return 0
	}
	return s.queries.Load() + s.batched.Load() + s.copies.Load()
}

// roundTrips is the count so far; nil counts nothing.
func (s *sqlCalls) roundTrips() int64 {
	if s == nil {
		return 0
	}
	return s.queries.Load() + s.batches.Load() + s.copies.Load()
}

// cpuPerEvent is the run's CPU per event in µs, every part together.
func (r *kmResult) cpuPerEvent() float64 {
	return float64((r.cpuSelf + r.cpuPG + r.cpuRelayPG + r.cpuBroker).Microseconds()) / float64(r.events)
}

// callsPerEvent renders the run's SQS requests and SQL round trips per
// event.
func (r *kmResult) callsPerEvent() string {
	var b strings.Builder
	n := float64(r.events)
	for _, op := range sortedOps(r.sqsCalls) {
		fmt.Fprintf(&b, "%s %.3f, ", op, float64(r.sqsCalls[op])/n)
	}
	fmt.Fprintf(&b, "SQL round trips %.3f (statements %.3f), relay's %.3f (statements %.3f)",
		float64(r.sql)/n, float64(r.sqlStatements)/n, float64(r.relaySQL)/n, float64(r.relaySQLStatements)/n)
	return b.String()
}

// debugSQL prints every statement (ACKGAP_BENCH_DEBUG_SQL=1).
var debugSQL = os.Getenv("ACKGAP_BENCH_DEBUG_SQL") == "1"
