package console_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/console"
	"github.com/ackgap/ackgap/internal/enginemetric"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
	"github.com/ackgap/ackgap/telemetry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// token is the write token of the tests that enable writes.
const token = "test-token-0123456789"

// traceParent is the traceparent of the seeded consumer spans.
const traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// seeder writes rows through a store's public API, as a handler does.
type seeder interface {
	stores.Operator
	inbox(t *testing.T, consumer, eventID string, rows ...ackgap.OutboxEntry)
}

type genericSeeder[TTx any] struct {
	stores.Operator
	s stores.Store[TTx]
}

func (g *genericSeeder[TTx]) inbox(t *testing.T, consumer, eventID string, rows ...ackgap.OutboxEntry) {
	t.Helper()
	ctx := context.Background()
	res, err := g.s.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: consumer, EventID: eventID,
		PayloadHash: stores.PayloadHash([]byte(eventID)), TraceParent: traceParent})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	for i := range rows {
		rows[i].Consumer, rows[i].EventID = consumer, eventID
		if rows[i].Headers == nil {
			rows[i].Headers = map[string]string{ackgap.TraceParentHeader: traceParent}
		}
		err := g.s.QueueOutboxTx(ctx, res.Tx, &rows[i])
		require.NoError(t, err)
	}
	require.NoError(t, g.s.CommitTx(ctx, res.Tx))
}

type backend struct {
	name string
	open func(t *testing.T) seeder
}

var backends = []backend{
	{"postgres", func(t *testing.T) seeder {
		pool, schema := testdb.Schema(t, 0)
		s, err := pgxstore.New(pool, &pgxstore.Config{Schema: schema})
		require.NoError(t, err)
		return &genericSeeder[pgx.Tx]{Operator: s, s: s}
	}},
	{"sqlite", func(t *testing.T) seeder {
		s, err := sqlitestore.Open(context.Background(), testdb.SQLitePath(t), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return &genericSeeder[*sql.Tx]{Operator: s, s: s}
	}},
}

func eachBackend(t *testing.T, f func(t *testing.T, s seeder)) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			_, err := s.Migrate(context.Background(), &stores.MigrateParams{})
			require.NoError(t, err)
			f(t, s)
		})
	}
}

// seed writes two consumers' inbox rows and four outbox rows: two dead
// charges, one done e-mail and one pending charge. It returns the ids by
// idempotency key.
func seed(t *testing.T, s seeder) map[string]int64 {
	t.Helper()
	out := func(kind, key string) ackgap.OutboxEntry {
		return ackgap.OutboxEntry{Kind: kind, IdempotencyKey: key, Payload: []byte(`{"card":"4242-secret"}`)}
	}
	s.inbox(t, "audit", "order-1")
	s.inbox(t, "billing", "order-1", out("charge", "charge:order-1"), out("email", "email:order-1"))
	s.inbox(t, "billing", "order-2", out("charge", "charge:order-2"))
	ctx := context.Background()
	claimed, err := s.ClaimOutbox(ctx, &stores.OutboxClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed.Rows, 3)
	ids := map[string]int64{}
	for _, r := range claimed.Rows {
		ids[r.IdempotencyKey] = r.ID
		if r.Kind == "email" {
			_, err = s.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxDone}}})
		} else {
			_, err = s.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxDead,
				LastError: "payment gateway: card declined <b>" + r.IdempotencyKey + "</b>"}}})
		}
		require.NoError(t, err)
	}
	s.inbox(t, "billing", "order-3", out("charge", "charge:order-3"))
	return ids
}

// syncBuffer is a log sink safe for the handler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// bundle is the console under test on a real HTTP server.
type bundle struct {
	t      *testing.T
	url    string // server URL + prefix
	client *http.Client
	log    *syncBuffer
	store  seeder
}

func setup(t *testing.T, s seeder, cfg *console.Config) *bundle {
	t.Helper()
	if cfg == nil {
		cfg = &console.Config{}
	}
	log := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	if cfg.Prefix == "" {
		cfg.Prefix = "/ackgap"
	}
	h, err := console.New(s, cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(cfg.Prefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(client.CloseIdleConnections)
	return &bundle{t: t, url: srv.URL + cfg.Prefix, client: client, log: log, store: s}
}

// do sends a request and returns the status, the body and the Location.
func (b *bundle) do(req *http.Request) (int, string, string) {
	b.t.Helper()
	resp, err := b.client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, string(body), resp.Header.Get("Location")
}

func (b *bundle) get(path string) (int, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.url+path, nil)
	require.NoError(b.t, err)
	code, body, _ := b.do(req)
	return code, body
}

func (b *bundle) post(path string, form url.Values, header ...string) (int, string, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+path, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

// login opens a session with the token and returns the CSRF token of the
// page at path.
func (b *bundle) login(path string) string {
	b.t.Helper()
	code, _, loc := b.post("/login", url.Values{"token": {token}, "next": {"/ackgap" + path}})
	require.Equal(b.t, http.StatusSeeOther, code)
	require.Equal(b.t, "/ackgap"+path, loc)
	code, body := b.get(path)
	require.Equal(b.t, http.StatusOK, code)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`).FindStringSubmatch(body)
	require.NotNil(b.t, m, "a logged-in page has the CSRF token in its forms: %s", body)
	return m[1]
}

// state returns the row's state in the store.
func (b *bundle) state(id int64) stores.OutboxState {
	b.t.Helper()
	res, err := b.store.FindOutbox(context.Background(), &stores.FindOutboxParams{IDs: []int64{id}})
	require.NoError(b.t, err)
	require.Len(b.t, res.Rows, 1)
	return res.Rows[0].State
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	_, err := console.New(nil, nil)
	require.ErrorContains(t, err, "store is nil")
	s, err := sqlitestore.Open(context.Background(), testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = console.New(s, &console.Config{Prefix: "ackgap/", Token: "short", PageSize: console.PageSizeMax + 1, QueryTimeout: -1,
		TraceURL: "javascript:alert(1)/{trace_id}"})
	require.ErrorContains(t, err, "invalid config")
	for _, field := range []string{"Prefix", "Token", "PageSize", "QueryTimeout", "TraceURL"} {
		require.ErrorContains(t, err, field, "every bad field is named at once")
	}
}

func TestPages(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		ids := seed(t, s)
		b := setup(t, s, nil)

		code, body := b.get("/")
		require.Equal(t, http.StatusOK, code)
		require.Regexp(t, `<td>audit</td><td class="n">1</td>`, body)
		require.Regexp(t, `<td>billing</td><td class="n">3</td><td class="n">3.0</td>`, body,
			"3 rows applied within the last minute: 3 per minute, not 3 spread over the hour's window")
		require.Contains(t, body, "Duplicates and dead-lettered deliveries are known only to a console mounted")
		require.Regexp(t, `(?s)<td>charge</td>\s*<td class="n"><a [^>]*>1</a></td>.*?class="dead-link">2</a>`, body, "charge: 1 pending, 2 dead")
		require.Contains(t, body, `id="oldest-due"`, "a pending row is due")
		require.Contains(t, body, `<span class="badge">read-only</span>`)
		require.Contains(t, body, `data-refresh="5"`)
		// Without JavaScript nothing refreshes: the box is rendered hidden
		// and unticked; console.js shows and ticks it (TestBrowser).
		require.Contains(t, body, `<label class="refresh" id="autorefresh-label" hidden><input type="checkbox" id="autorefresh"> refresh every 5 s</label>`)
		require.NotRegexp(t, `id="autorefresh"[^>]*checked`, body)

		code, body = b.get("/outbox?state=dead")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "charge:order-1")
		require.Contains(t, body, "charge:order-2")
		require.NotContains(t, body, "charge:order-3", "pending rows are filtered out")
		require.NotContains(t, body, "<b>charge", "the last error is escaped")
		require.Contains(t, body, "&lt;b&gt;charge:order-1")
		require.NotContains(t, body, `id="redrive-all"`, "a read-only console offers no redrive")

		code, body = b.get("/outbox?kind=charge&key=charge:order-2")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "charge:order-2")
		require.NotContains(t, body, "charge:order-1")

		code, body = b.get("/outbox/" + itoa(ids["charge:order-1"]))
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `<span class="state dead" id="row-state">dead</span>`)
		require.Regexp(t, `id="row-attempts">1<`, body)
		require.Contains(t, body, "card declined")
		require.Contains(t, body, "0af7651916cd43dd8448eb211c80319c", "the trace id of the consumer span that wrote the row")
		require.Contains(t, body, "b7ad6b7169203331")
		require.NotContains(t, body, "4242-secret", "payloads are hidden by default")
		require.Contains(t, body, "22 bytes, hidden")

		code, body = b.get("/event?id=order-1")
		require.Equal(t, http.StatusOK, code)
		require.Regexp(t, `(?s)id="event-inbox".*<td>audit</td>.*<td>billing</td>`, body)
		require.Contains(t, body, "email:order-1")
		require.Contains(t, body, "charge:order-1")

		code, body = b.get("/event?id=order-404")
		require.Equal(t, http.StatusNotFound, code)
		require.Contains(t, body, `id="not-found"`)
		code, _ = b.get("/event")
		require.Equal(t, http.StatusOK, code, "the empty lookup form")

		code, body = b.get("/live")
		require.Equal(t, http.StatusNotFound, code, "no recorder, no live page")
		require.Contains(t, body, "console.Config.Recorder")

		code, body = b.get("/static/console.css")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "--dead")
		code, _ = b.get("/static/console.js")
		require.Equal(t, http.StatusOK, code)

		for path, want := range map[string]int{
			"/outbox?state=lost":                      http.StatusBadRequest,
			"/outbox?after=x":                         http.StatusBadRequest,
			"/outbox?key=" + strings.Repeat("k", 513): http.StatusBadRequest,
			"/outbox/abc":                             http.StatusBadRequest,
			"/outbox/0":                               http.StatusBadRequest,
			"/outbox/999999":                          http.StatusNotFound,
			"/event?id=" + strings.Repeat("e", 1025):  http.StatusBadRequest,
			"/nope":                                   http.StatusNotFound,
		} {
			code, _ := b.get(path)
			require.Equal(t, want, code, path)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestHeldRows: the overview tells rows held for direct dispatch from
// rows waiting out a retry backoff, and does not call held rows "keeping
// up"; the outbox page filters held rows and marks them.
func TestHeldRows(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		ctx := context.Background()
		// A process wrote a row held for an hour and died: nothing is due.
		s.inbox(t, "billing", "order-4", ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:order-4",
			Payload: []byte(`{}`), AvailableAt: time.Now().Add(time.Hour)})
		code, body := setup(t, s, nil).get("/")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "Oldest due row: none yet.")
		require.Contains(t, body, `<span id="held">1 held for dispatch or delayed (never tried, not due yet)`)
		require.NotContains(t, body, "keeping up")
		require.NotContains(t, body, `id="backoff"`)

		ids := seed(t, s)
		// A refund tried once, waiting out its backoff.
		s.inbox(t, "billing", "order-5", ackgap.OutboxEntry{Kind: "refund", IdempotencyKey: "refund:order-5", Payload: []byte(`{}`)})
		claimed, err := s.ClaimOutbox(ctx, &stores.OutboxClaimParams{Lease: time.Minute, Kinds: []string{"refund"}})
		require.NoError(t, err)
		require.Len(t, claimed.Rows, 1)
		r := claimed.Rows[0]
		res, err := s.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
			{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxPending, Delay: time.Hour, LastError: "503"}}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, res.Changed)
		all, err := s.FindOutbox(ctx, &stores.FindOutboxParams{KeyPrefix: "charge:order-4"})
		require.NoError(t, err)
		require.Len(t, all.Rows, 1)
		heldID := all.Rows[0].ID

		b := setup(t, s, nil) // a new handler: counts not cached
		code, body = b.get("/")
		require.Equal(t, http.StatusOK, code)
		require.Regexp(t, `(?s)<td>charge</td>\s*<td class="n"><a [^>]*>2</a></td>\s*<td class="n"><a [^>]*class="held-link">1</a></td>\s*<td class="n">0</td>`, body,
			"charge: 2 pending, of which 1 held, none backing off")
		require.Regexp(t, `(?s)<td>refund</td>\s*<td class="n"><a [^>]*>1</a></td>\s*<td class="n"><a [^>]*class="held-link">0</a></td>\s*<td class="n">1</td>`, body,
			"refund: 1 pending, backing off")
		require.Contains(t, body, `id="oldest-due"`, "charge:order-3 is due")
		require.Contains(t, body, `<span id="held">1 held`)
		require.Contains(t, body, `<span id="backoff">1 waiting out a retry backoff.</span>`)

		code, body = b.get("/outbox?state=held")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "charge:order-4")
		require.NotContains(t, body, "charge:order-3", "due, not held")
		require.NotContains(t, body, "refund:order-5", "tried: backing off, not held")
		require.Contains(t, body, ">pending (held)</span>")
		require.NotContains(t, body, `id="redrive-all"`)

		code, body = b.get("/outbox?state=pending")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "refund:order-5")
		require.Equal(t, 1, strings.Count(body, "(held)"), "only charge:order-4 is held")

		_, body = b.get("/outbox/" + itoa(heldID))
		require.Contains(t, body, `id="row-held">held until`)
		_, body = b.get("/outbox/" + itoa(r.ID))
		require.NotContains(t, body, `id="row-held"`)
		_, body = b.get("/outbox/" + itoa(ids["charge:order-1"]))
		require.NotContains(t, body, `id="row-held"`, "a dead row is not held")
	})
}

func TestPagingIsBounded(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		seed(t, s)
		b := setup(t, s, &console.Config{PageSize: 2})
		code, body := b.get("/outbox")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, 2, strings.Count(body, `class="row-link"`), "a page holds PageSize rows")
		m := regexp.MustCompile(`id="next" href="/ackgap/outbox\?after=(\d+)"`).FindStringSubmatch(body)
		require.NotNil(t, m, "a full page links to the next: %s", body)
		code, body = b.get("/outbox?after=" + m[1])
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, 2, strings.Count(body, `class="row-link"`))
		require.NotContains(t, body, `id="next"`, "the last page has no next link")
	})
}

func TestQueryTimeoutIsBusy(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		seed(t, s)
		b := setup(t, s, &console.Config{QueryTimeout: time.Nanosecond})
		for _, path := range []string{"/", "/outbox", "/event?id=order-1"} {
			code, body := b.get(path)
			require.Equal(t, http.StatusServiceUnavailable, code, path)
			require.Contains(t, body, "database is busy", path)
		}
	})
}

func TestTraceURL(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		ids := seed(t, s)
		b := setup(t, s, &console.Config{TraceURL: "http://jaeger:16686/trace/{trace_id}"})
		_, body := b.get("/outbox/" + itoa(ids["charge:order-1"]))
		require.Contains(t, body, `<a href="http://jaeger:16686/trace/0af7651916cd43dd8448eb211c80319c" id="trace-link">`)
		_, body = b.get("/event?id=order-1")
		require.Contains(t, body, `<a href="http://jaeger:16686/trace/0af7651916cd43dd8448eb211c80319c">`)
	})
}

func TestShowPayloads(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		ids := seed(t, s)
		b := setup(t, s, &console.Config{ShowPayloads: true})
		code, body := b.get("/outbox/" + itoa(ids["charge:order-2"]))
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `{&#34;card&#34;:&#34;4242-secret&#34;}`)
	})
}

func TestWritesNeedTokenAndCSRF(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		ids := seed(t, s)
		dead1, dead2 := ids["charge:order-1"], ids["charge:order-2"]

		ro := setup(t, s, nil)
		code, body, _ := ro.post("/outbox/"+itoa(dead1)+"/redrive", nil)
		require.Equal(t, http.StatusForbidden, code)
		require.Contains(t, body, "read-only")
		code, _, _ = ro.post("/login", url.Values{"token": {token}})
		require.Equal(t, http.StatusForbidden, code, "no token, no login")
		require.Equal(t, stores.OutboxDead, ro.state(dead1))

		b := setup(t, s, &console.Config{Token: token})
		code, body = b.get("/outbox/" + itoa(dead1))
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `id="redrive" disabled`, "logged out: the button says to log in")

		code, body, _ = b.post("/outbox/"+itoa(dead1)+"/redrive", nil)
		require.Equal(t, http.StatusUnauthorized, code, "no session")
		// The error page's login link returns to the row's page, not to
		// the POST-only redrive URL (which answers GET with 405; issue 25).
		require.Contains(t, body, `/login?next=%2Fackgap%2Foutbox%2F`+itoa(dead1)+`"`)
		require.NotContains(t, body, "redrive%22")
		require.NotContains(t, body, "%2Fredrive")
		code, body, _ = b.post("/outbox/redrive", nil)
		require.Equal(t, http.StatusUnauthorized, code)
		require.Contains(t, body, `/login?next=%2Fackgap%2Foutbox%3Fstate%3Ddead"`, "a bulk form returns to the dead rows")
		code, body, _ = b.post("/login", url.Values{"token": {"wrong-token-0123456789"}})
		require.Equal(t, http.StatusUnauthorized, code)
		require.Contains(t, body, "That is not the token")
		code, _, _ = b.post("/outbox/"+itoa(dead1)+"/redrive", nil, "Authorization", "Bearer wrong")
		require.Equal(t, http.StatusUnauthorized, code, "a wrong bearer token")

		csrf := b.login("/outbox/" + itoa(dead1))
		code, body, _ = b.post("/outbox/"+itoa(dead1)+"/redrive", nil)
		require.Equal(t, http.StatusForbidden, code, "a session without the CSRF token")
		require.Contains(t, body, "CSRF")
		code, _, _ = b.post("/outbox/"+itoa(dead1)+"/redrive", url.Values{"csrf": {strings.Repeat("0", 64)}})
		require.Equal(t, http.StatusForbidden, code, "a wrong CSRF token")
		code, _, _ = b.post("/outbox/"+itoa(dead1)+"/redrive", url.Values{"csrf": {csrf}}, "Sec-Fetch-Site", "cross-site")
		require.Equal(t, http.StatusForbidden, code, "a cross-site request, even with the token")
		code, _, _ = b.post("/outbox/"+itoa(dead1)+"/redrive", url.Values{"csrf": {csrf}}, "Origin", "https://evil.example")
		require.Equal(t, http.StatusForbidden, code, "another origin")
		require.Equal(t, stores.OutboxDead, b.state(dead1), "no refused request changed anything")
		require.Contains(t, b.log.String(), "console: write refused")

		code, _, loc := b.post("/outbox/"+itoa(dead1)+"/redrive", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, code)
		require.Equal(t, "/ackgap/outbox/"+itoa(dead1)+"?redriven=1", loc)
		require.Equal(t, stores.OutboxPending, b.state(dead1))
		require.Equal(t, stores.OutboxDead, b.state(dead2), "only that row")
		require.Regexp(t, `console: redrive" who="session [0-9a-f]{8} from 127\.0\.0\.1:\d+" row=`+itoa(dead1)+` redriven=1`, b.log.String())
		_, body = b.get(strings.TrimPrefix(loc, "/ackgap"))
		require.Contains(t, body, "Redriven: the row is pending again")

		code, _, loc = b.post("/outbox/"+itoa(dead1)+"/redrive", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, code)
		require.Contains(t, loc, "redriven=0", "a row no longer dead is left alone")

		// A script with the bearer token needs no session or CSRF token.
		script := setup(t, s, &console.Config{Token: token})
		code, _, loc = script.post("/outbox/redrive", url.Values{"kind": {"charge"}}, "Authorization", "Bearer "+token)
		require.Equal(t, http.StatusSeeOther, code)
		require.Equal(t, "/ackgap/outbox?kind=charge&redriven=1&state=dead", loc)
		require.Equal(t, stores.OutboxPending, b.state(dead2))
		require.Contains(t, script.log.String(), `who="bearer token from 127.0.0.1`)

		code, _, loc = b.post("/logout", nil)
		require.Equal(t, http.StatusSeeOther, code)
		require.Equal(t, "/ackgap/", loc)
		code, _, _ = b.post("/outbox/redrive", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusUnauthorized, code, "logged out")
	})
}

func TestLoginThrottle(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		b := setup(t, s, &console.Config{Token: token})
		for range 10 {
			code, _, _ := b.post("/login", url.Values{"token": {"wrong-token-0123456789"}})
			require.Equal(t, http.StatusUnauthorized, code)
		}
		// Throttled: a wrong guess is slowed and refused with 429, the
		// right token is slowed but never refused (issue 25: behind a
		// proxy, wrong guesses from anyone must not lock operators out).
		code, body, _ := b.post("/login", url.Values{"token": {"wrong-token-0123456789"}})
		require.Equal(t, http.StatusTooManyRequests, code, "after 10 wrong tokens in a minute, a wrong one is refused with 429")
		require.Contains(t, body, "too many wrong tokens")
		code, _, _ = b.post("/login", url.Values{"token": {token}})
		require.Equal(t, http.StatusSeeOther, code, "the right token is accepted, throttle or not")
		code, _, _ = b.post("/outbox/redrive", nil, "Authorization", "Bearer "+token)
		require.Equal(t, http.StatusSeeOther, code, "so is the right bearer token")
		code, _, _ = b.post("/outbox/redrive", nil, "Authorization", "Bearer wrong")
		require.Equal(t, http.StatusTooManyRequests, code, "a wrong bearer token is refused with 429")

		b = setup(t, s, &console.Config{Token: token})
		for range 10 {
			code, _, _ := b.post("/outbox/redrive", nil, "Authorization", "Bearer wrong")
			require.Equal(t, http.StatusUnauthorized, code)
		}
		code, _, _ = b.post("/login", url.Values{"token": {"wrong-token-0123456789"}})
		require.Equal(t, http.StatusTooManyRequests, code, "wrong bearer tokens count as well")
		code, _, _ = b.post("/outbox/redrive", nil, "Authorization", "Bearer "+token)
		require.Equal(t, http.StatusSeeOther, code, "the right bearer token still works")
	})
}

func TestRedriveFilter(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		ids := seed(t, s)
		b := setup(t, s, &console.Config{Token: token})
		csrf := b.login("/outbox?state=dead")
		code, _, loc := b.post("/outbox/redrive", url.Values{"csrf": {csrf}, "kind": {"charge"}, "key": {"charge:order-2"}})
		require.Equal(t, http.StatusSeeOther, code)
		require.Equal(t, "/ackgap/outbox?key=charge%3Aorder-2&kind=charge&redriven=1&state=dead", loc)
		require.Equal(t, stores.OutboxPending, b.state(ids["charge:order-2"]))
		require.Equal(t, stores.OutboxDead, b.state(ids["charge:order-1"]), "outside the key prefix")
		code, body := b.get(strings.TrimPrefix(loc, "/ackgap"))
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "1 row(s) redriven")
		code, _, _ = b.post("/outbox/redrive", url.Values{"csrf": {csrf}, "kind": {"x"}, "key": {strings.Repeat("k", 600)}})
		require.Equal(t, http.StatusBadRequest, code)
	})
}

func TestLive(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		seed(t, s)
		rec := console.NewRecorder()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rec.Reader()))
		t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		// The instruments package telemetry records with (its names and
		// scope), with buckets chosen for the test; the browser test
		// feeds the Recorder from a real router.
		meter := mp.Meter(telemetry.ScopeName)
		gap, err := meter.Float64Histogram(telemetry.MetricAckGap, metric.WithExplicitBucketBoundaries(0.001, 0.01, 0.1))
		require.NoError(t, err)
		headroom, err := meter.Float64Histogram(telemetry.MetricLeaseHeadroom, metric.WithExplicitBucketBoundaries(-1, 0, 1, 10))
		require.NoError(t, err)
		dups, err := meter.Int64Counter(telemetry.MetricDuplicatesSkipped)
		require.NoError(t, err)
		sqs := metric.WithAttributes(semconv.MessagingSystemKey.String(telemetry.SystemAWSSQS),
			semconv.MessagingDestinationName("orders"), telemetry.AttrConsumer.String("billing"))
		ctx := context.Background()
		for _, v := range []float64{0.0005, 0.005, 0.005, 0.05} {
			gap.Record(ctx, v, sqs)
		}
		for _, v := range []float64{-2, 5, 5, 5} {
			headroom.Record(ctx, v, sqs)
		}
		dups.Add(ctx, 3, sqs)
		dups.Add(ctx, 1, metric.WithAttributes(attribute.String("ackgap.consumer", "audit")))

		b := setup(t, s, &console.Config{Recorder: rec})
		code, body := b.get("/live")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "aws_sqs · orders")
		require.Contains(t, body, "4 acks · mean 15.1ms · p50 ≤10ms · p99 ≤100ms", "ack gaps 0.5, 5, 5 and 50 ms")
		// Counts on the bars and a y axis up to the fullest bucket (issue 25).
		require.Contains(t, body, `class="label axis-y" text-anchor="start">2 acks</text>`, "the two 5 ms gaps share the fullest bucket")
		require.Contains(t, body, `class="label count">2</text>`)
		require.Contains(t, body, `class="label count">1</text>`, "0.5 ms and 50 ms, one each")
		require.Contains(t, body, "bucket upper bound")
		require.Contains(t, body, `<span class="neg">1 negative (25.0%)</span>`)
		require.Equal(t, 2, strings.Count(body, `class="bar neg"`), "the buckets ending at -1 and at 0 are red")
		require.Contains(t, body, "<svg")
		require.NotContains(t, body, `id="kafka-partitions"`, "no Kafka engine on the provider, no partition table")

		code, body = b.get("/")
		require.Equal(t, http.StatusOK, code)
		require.Regexp(t, `<td>billing</td><td class="n">3</td><td class="n">[0-9.]+</td><td class="n">3</td><td class="n">0</td>`, body)
		require.Regexp(t, `<td>audit</td><td class="n">1</td><td class="n">[0-9.]+</td><td class="n">1</td>`, body)
		require.Contains(t, body, `href="/ackgap/live"`)
	})
}

// TestLiveKafkaPartitions: the Kafka watermark engine's instruments
// (kafkabroker's names and scope, fed here by a callback as the engine
// does; kafkabroker's TestEngineMetrics checks what the engine reports)
// make a table on the live page, one row per group, topic and partition
// in that order, "–" where an instrument reported nothing, the acked
// records not yet committed (watermark − committed), and regressions in
// red.
func TestLiveKafkaPartitions(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		rec := console.NewRecorder()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rec.Reader()))
		t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		meter := mp.Meter(enginemetric.ScopeName)
		gauges := map[string]metric.Int64ObservableGauge{}
		for _, name := range []string{enginemetric.Committed, enginemetric.Watermark, enginemetric.InFlight, enginemetric.Buffered, enginemetric.Lag} {
			g, err := meter.Int64ObservableGauge(name)
			require.NoError(t, err)
			gauges[name] = g
		}
		skipped, err := meter.Int64ObservableCounter(enginemetric.ReplaysSkipped)
		require.NoError(t, err)
		regressions, err := meter.Int64ObservableCounter(enginemetric.Regressions)
		require.NoError(t, err)
		type part struct {
			group, topic, partition string
			values                  map[string]int64 // by instrument; absent: not reported
		}
		parts := []part{
			{"billing", "orders", "1", map[string]int64{enginemetric.Committed: 40, enginemetric.Watermark: 42, enginemetric.InFlight: 2,
				enginemetric.Buffered: 5, enginemetric.Lag: 10, enginemetric.ReplaysSkipped: 7, enginemetric.Regressions: 1}},
			{"billing", "orders", "0", map[string]int64{enginemetric.Committed: 100, enginemetric.Watermark: 100, enginemetric.InFlight: 0,
				enginemetric.Buffered: 0, enginemetric.Lag: 0, enginemetric.ReplaysSkipped: 0, enginemetric.Regressions: 0}},
			{"billing", "orders", "10", map[string]int64{enginemetric.InFlight: 0, enginemetric.Buffered: 0,
				enginemetric.ReplaysSkipped: 0, enginemetric.Regressions: 0}}, // held, no record yet
			{"audit", "orders", "3", map[string]int64{enginemetric.Committed: 5, enginemetric.Watermark: 5, enginemetric.InFlight: 0,
				enginemetric.Buffered: 0, enginemetric.Lag: 1, enginemetric.ReplaysSkipped: 0, enginemetric.Regressions: 0}},
		}
		all := []metric.Observable{skipped, regressions}
		for _, g := range gauges {
			all = append(all, g)
		}
		_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			for _, p := range parts {
				attrs := metric.WithAttributes(semconv.MessagingSystemKafka, semconv.MessagingConsumerGroupName(p.group),
					semconv.MessagingDestinationName(p.topic), semconv.MessagingDestinationPartitionID(p.partition))
				for name, v := range p.values {
					switch name {
					case enginemetric.ReplaysSkipped:
						o.ObserveInt64(skipped, v, attrs)
					case enginemetric.Regressions:
						o.ObserveInt64(regressions, v, attrs)
					default:
						o.ObserveInt64(gauges[name], v, attrs)
					}
				}
			}
			return nil
		}, all...)
		require.NoError(t, err)

		b := setup(t, s, &console.Config{Recorder: rec})
		code, body := b.get("/live")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `id="kafka-partitions"`)
		cells := func(cs ...string) string {
			return "<tr><td>" + cs[0] + "</td><td>" + cs[1] + `</td><td class="n">` + strings.Join(cs[2:], `</td><td class="n">`)
		}
		rows := []string{
			// group, topic, partition, committed, watermark, acked not committed, in flight, buffered, lag, skipped
			cells("audit", "orders", "3", "5", "5", "0", "0", "0", "1", "0") + `</td><td class="n">0</td></tr>`,
			cells("billing", "orders", "0", "100", "100", "0", "0", "0", "0", "0") + `</td><td class="n">0</td></tr>`,
			cells("billing", "orders", "1", "40", "42", "2", "2", "5", "10", "7") + `</td><td class="n neg">1</td></tr>`,
			cells("billing", "orders", "10", "–", "–", "–", "0", "0", "–", "0") + `</td><td class="n">0</td></tr>`,
		}
		at := 0
		for _, row := range rows {
			i := strings.Index(body[at:], row)
			require.GreaterOrEqual(t, i, 0, "row %q, in order, in\n%s", row, body)
			at += i + len(row)
		}
	})
}

func TestPrune(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		ids := seed(t, s)
		old := time.Now().Add(-48 * time.Hour)
		s.inbox(t, "billing", "order-old", ackgap.OutboxEntry{Kind: "email", IdempotencyKey: "email:order-old",
			Payload: []byte(`{}`), Now: old, AvailableAt: old})
		ctx := context.Background()
		claimed, err := s.ClaimOutbox(ctx, &stores.OutboxClaimParams{Kinds: []string{"email"}, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, claimed.Rows, 1)
		_, err = s.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
			{ID: claimed.Rows[0].ID, ClaimToken: claimed.Rows[0].Claim.Token, State: stores.OutboxDone}}})
		require.NoError(t, err)

		b := setup(t, s, &console.Config{Token: token})
		csrf := b.login("/outbox?state=done")
		code, body := b.get("/outbox?state=done")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `id="prune"`)

		code, _, _ = b.post("/outbox/prune", url.Values{"older": {"24h"}})
		require.Equal(t, http.StatusForbidden, code, "no CSRF token")
		code, _, _ = b.post("/outbox/prune", url.Values{"csrf": {csrf}, "older": {"10m"}})
		require.Equal(t, http.StatusBadRequest, code, "younger than an hour")
		code, _, _ = b.post("/outbox/prune", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusBadRequest, code, "no age")

		code, _, loc := b.post("/outbox/prune", url.Values{"csrf": {csrf}, "older": {"24h"}, "kind": {"email"}})
		require.Equal(t, http.StatusSeeOther, code)
		require.Equal(t, "/ackgap/outbox?kind=email&pruned=1&state=done", loc)
		res, err := s.FindOutbox(ctx, &stores.FindOutboxParams{Kind: "email"})
		require.NoError(t, err)
		require.Len(t, res.Rows, 1, "the done row of 48 h ago is gone, today's is kept")
		require.Equal(t, "email:order-1", res.Rows[0].IdempotencyKey)
		require.Equal(t, stores.OutboxDead, b.state(ids["charge:order-1"]), "dead rows are never pruned")
		require.Regexp(t, `console: prune" who="session [0-9a-f]{8} from 127\.0\.0\.1:\d+" kind=email key_prefix="" older=24h0m0s deleted=1`, b.log.String())
		_, body = b.get("/outbox?kind=email&pruned=1&state=done")
		require.Contains(t, body, "1 done row(s) deleted")
	})
}
