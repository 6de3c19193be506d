package outbox_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	goleak.VerifyTestMain(m)
}

// store is what the tests need: the store contract (to write outbox rows
// in an inbox transaction, as a handler does) and the relay's part.
type store[TTx any] interface {
	stores.Store[TTx]
	stores.OutboxStore
}

// backend is a migrated store of one kind, with how to reach its database
// from a child process.
type backend[TTx any] struct {
	name  string
	store store[TTx]
	// env locates the database for a child process (childMain).
	env []string
	// pool is the PostgreSQL pool (nil for SQLite).
	pool *pgxpool.Pool
}

func sqliteBackend(t *testing.T) *backend[*sqlTx] {
	t.Helper()
	path := testdb.SQLitePath(t)
	s, err := sqlitestore.Open(context.Background(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	return &backend[*sqlTx]{name: "sqlite", store: s, env: []string{envStore + "=sqlite", envSQLitePath + "=" + path}}
}

func pgBackend(t testing.TB, maxConns int32) *backend[pgx.Tx] {
	t.Helper()
	pool, schema := testdb.Schema(t, maxConns)
	s, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = s.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	return &backend[pgx.Tx]{name: "postgres", store: s, pool: pool, env: []string{envStore + "=postgres", envPGSchema + "=" + schema}}
}

// bothStores runs test on SQLite and on PostgreSQL.
func bothStores(t *testing.T, sqlite func(t *testing.T, b *backend[*sqlTx]), pg func(t *testing.T, b *backend[pgx.Tx])) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		sqlite(t, sqliteBackend(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pg(t, pgBackend(t, 16))
	})
}

var events atomic.Int64

// insert writes rows (distinct new keys) in one inbox transaction, as a
// handler's ackgap.AddOutbox calls do (stores.Store.QueueOutboxTx), and
// returns their ids, read back by key.
func insert[TTx any](t testing.TB, s stores.Store[TTx], rows ...ackgap.OutboxEntry) []int64 {
	t.Helper()
	ctx := context.Background()
	res, err := s.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "test", EventID: fmt.Sprintf("e%d", events.Add(1))})
	require.NoError(t, err)
	for i := range rows {
		require.NoError(t, s.QueueOutboxTx(ctx, res.Tx, &rows[i]))
	}
	require.NoError(t, s.CommitTx(ctx, res.Tx))
	ob, ok := s.(stores.OutboxStore)
	require.True(t, ok, "%T is not a stores.OutboxStore", s)
	all, err := ob.ListOutbox(ctx, &stores.OutboxListParams{Limit: 1_000_000})
	require.NoError(t, err)
	byKey := map[string]int64{}
	for _, r := range all.Rows {
		byKey[r.IdempotencyKey] = r.ID
	}
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		id, ok := byKey[r.IdempotencyKey]
		require.True(t, ok, "row %q not found after its commit", r.IdempotencyKey)
		ids = append(ids, id)
	}
	return ids
}

// charge is an outbox row for the test provider.
func charge(key string) ackgap.OutboxEntry {
	return ackgap.OutboxEntry{
		Kind: "charge", IdempotencyKey: key, Payload: []byte(`{"order":"` + key + `","amount_cents":100}`),
		Headers: map[string]string{"content-type": "application/json", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	}
}

func charges(n int) []ackgap.OutboxEntry {
	rows := make([]ackgap.OutboxEntry, n)
	for i := range rows {
		rows[i] = charge(fmt.Sprintf("charge:o%05d", i))
	}
	return rows
}

// rowsByID returns every outbox row, by id.
func rowsByID(t testing.TB, s stores.OutboxStore) map[int64]stores.OutboxRow {
	t.Helper()
	res, err := s.ListOutbox(context.Background(), &stores.OutboxListParams{Limit: 100000})
	require.NoError(t, err)
	out := make(map[int64]stores.OutboxRow, len(res.Rows))
	for _, r := range res.Rows {
		out[r.ID] = r
	}
	return out
}

func rowOf(t testing.TB, s stores.OutboxStore, id int64) stores.OutboxRow {
	t.Helper()
	r, ok := rowsByID(t, s)[id]
	require.True(t, ok, "row %d", id)
	return r
}

// backlog returns the rows not done yet.
func backlog(t testing.TB, s stores.OutboxStore) int64 {
	t.Helper()
	st, err := s.OutboxStats(context.Background(), &stores.OutboxStatsParams{})
	require.NoError(t, err)
	return st.Backlog()
}

// running runs relay until the test ends (or stop is called), and fails
// the test if Run returns an error.
func running(t *testing.T, relay *outbox.Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

// reports collects a relay's reports.
type reports struct {
	mu   sync.Mutex
	list []outbox.Report
	ch   chan outbox.Report
}

func newReports() *reports { return &reports{ch: make(chan outbox.Report, 10000)} }

func (r *reports) observe(_ context.Context, rep *outbox.Report) {
	r.mu.Lock()
	r.list = append(r.list, *rep)
	r.mu.Unlock()
	select {
	case r.ch <- *rep:
	default:
	}
}

func (r *reports) outcomes(id int64) []outbox.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []outbox.Outcome
	for _, rep := range r.list {
		if rep.Row.ID == id {
			out = append(out, rep.Outcome)
		}
	}
	return out
}

func (r *reports) of(id int64) []outbox.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []outbox.Report
	for _, rep := range r.list {
		if rep.Row.ID == id {
			out = append(out, rep)
		}
	}
	return out
}

// next waits for the next report.
func (r *reports) next(t *testing.T) outbox.Report {
	t.Helper()
	select {
	case rep := <-r.ch:
		return rep
	case <-time.After(20 * time.Second):
		t.Fatal("no relay report within 20s")
		return outbox.Report{}
	}
}

// provider is a payment API on loopback that behaves like real ones
// (Stripe, Adyen): it stores its response per Idempotency-Key; the same
// key with the same body gets the original response again and is never
// charged twice; the same key with another body gets 422. fail can make
// a call fail before it charges.
type provider struct {
	srv *httptest.Server

	mu      sync.Mutex
	calls   []providerCall
	byKey   map[string]*storedResponse
	charged int
	// fail, when set, returns a status (and Retry-After value) for call n
	// (1-based) of key to fail without charging; 0 passes.
	fail func(key string, n int) (status int, retryAfter string)
	// hold, when set, keeps each request waiting until it is closed (at
	// most holdMax).
	hold    chan struct{}
	holdMax time.Duration

	inflight atomic.Int64
	started  chan string // receives each request's key as it arrives
}

type providerCall struct {
	Key, Body, Response string
	Status              int
	Replayed            bool
}

type storedResponse struct {
	bodyHash [32]byte
	status   int
	body     string
}

func newProvider(t *testing.T) *provider {
	p := &provider{byKey: map[string]*storedResponse{}, started: make(chan string, 100000), holdMax: 2 * time.Second}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) url() string { return p.srv.URL + "/charges" }

// effect returns the HTTP effect on the provider, with a client that keeps
// enough idle connections for the relays' concurrency (the default of 2 per
// host would open a connection per call).
func (p *provider) effect() outbox.Effect {
	client := p.srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	return outbox.HTTP(client, p.url())
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.inflight.Add(1)
	defer p.inflight.Add(-1)
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get(outbox.HeaderIdempotencyKey)
	p.started <- key
	p.mu.Lock()
	hold := p.hold
	p.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-time.After(p.holdMax):
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	call := providerCall{Key: key, Body: string(body)}
	defer func() { p.calls = append(p.calls, call) }()
	n := 1
	for _, c := range p.calls {
		if c.Key == key {
			n++
		}
	}
	respond := func(status int, resp string) {
		call.Status, call.Response = status, resp
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, resp)
	}
	if key == "" {
		respond(http.StatusBadRequest, `{"error":"Idempotency-Key required"}`)
		return
	}
	if p.fail != nil {
		if status, retryAfter := p.fail(key, n); status != 0 {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			respond(status, fmt.Sprintf(`{"error":"injected %d"}`, status))
			return
		}
	}
	hash := sha256.Sum256(body)
	if s, ok := p.byKey[key]; ok {
		if s.bodyHash != hash {
			respond(http.StatusUnprocessableEntity, `{"error":"Idempotency-Key reused with another request body"}`)
			return
		}
		call.Replayed = true
		w.Header().Set("Idempotent-Replayed", "true")
		respond(s.status, s.body)
		return
	}
	p.charged++
	resp := fmt.Sprintf(`{"id":"ch_%d","key":%q}`, p.charged, key)
	p.byKey[key] = &storedResponse{bodyHash: hash, status: http.StatusCreated, body: resp}
	respond(http.StatusCreated, resp)
}

// callsOf returns the calls made with key, in order.
func (p *provider) callsOf(key string) []providerCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []providerCall
	for _, c := range p.calls {
		if c.Key == key {
			out = append(out, c)
		}
	}
	return out
}

// counts returns the calls made, and the charges made (distinct keys).
func (p *provider) counts() (calls, charged int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls), p.charged
}

// callsPerKey returns how many calls each key got.
func (p *provider) callsPerKey() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, c := range p.calls {
		out[c.Key]++
	}
	return out
}

// percentile returns the p-th percentile (0 < p <= 1) of ds by the
// nearest-rank method.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
