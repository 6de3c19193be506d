package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Sarama's metrics registry starts a process-wide meter ticker
		// that is never stopped (rcrowley/go-metrics).
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
}

// t0 is the tests' clock: the command runs at t0 and the seeded rows are
// dated before it, so the tables are the same on every run.
var t0 = time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)

// traceParent is the traceparent seeded with every inbox row.
const traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// cli runs the command against one database.
type cli struct {
	t       *testing.T
	env     map[string]string
	flags   []string // connection flags put after the command's own
	backend string
}

type result struct {
	code           int
	stdout, stderr string
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), &env{
		args:   append(append([]string{}, args...), c.flags...),
		stdout: &out, stderr: &errOut,
		getenv: func(k string) string { return c.env[k] },
		now:    func() time.Time { return t0 },
	})
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// ok runs args and requires exit code 0.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	require.Equal(c.t, exitOK, r.code, "ackgap %s: stderr %s", strings.Join(args, " "), r.stderr)
	return r.stdout
}

// json runs args with --json, requires exit code want and decodes stdout
// into v.
func (c *cli) json(v any, want int, args ...string) {
	c.t.Helper()
	r := c.run(append(args, "--json")...)
	require.Equal(c.t, want, r.code, "ackgap %s: stderr %s", strings.Join(args, " "), r.stderr)
	require.NoError(c.t, json.Unmarshal([]byte(r.stdout), v), "stdout: %s", r.stdout)
}

// seeder writes inbox and outbox rows through a store's public API.
type seeder interface {
	stores.Operator
	inbox(t *testing.T, consumer, eventID string, at time.Time, rows ...ackgap.OutboxEntry)
	// progress writes eventID's inbox row with a progress row, as a
	// Kafka consumer with SubscriberConfig.Progress does.
	progress(t *testing.T, consumer, eventID string, p stores.Progress)
}

type backend struct {
	name string
	open func(t *testing.T) (*cli, seeder)
}

// backends are PostgreSQL (a schema per test, named with --schema, the DSN
// from ACKGAP_DSN), SQLite (a file per test, the DSN from --dsn) and
// MariaDB (a database per test, the driver's DSN from --dsn).
var backends = []backend{
	{"postgres", func(t *testing.T) (*cli, seeder) {
		pool, schema := testdb.Schema(t, 0)
		s, err := pgxstore.New(pool, &pgxstore.Config{Schema: schema})
		require.NoError(t, err)
		c := &cli{t: t, env: map[string]string{"ACKGAP_DSN": testdb.URL()}, flags: []string{"--schema", schema}, backend: "postgres"}
		return c, &genericSeeder[pgxTx]{Operator: s, s: s}
	}},
	{"sqlite", func(t *testing.T) (*cli, seeder) {
		path := testdb.SQLitePath(t)
		s, err := sqlitestore.Open(context.Background(), path, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		c := &cli{t: t, env: map[string]string{}, flags: []string{"--dsn", "sqlite:" + path}, backend: "sqlite"}
		return c, &genericSeeder[sqlTx]{Operator: s, s: s}
	}},
	{"mariadb", func(t *testing.T) (*cli, seeder) {
		dsn := testdb.MySQLDatabase(t)
		s, err := mysqlstore.Open(context.Background(), dsn, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		c := &cli{t: t, env: map[string]string{}, flags: []string{"--dsn", dsn}, backend: "mariadb"}
		return c, &genericSeeder[sqlTx]{Operator: s, s: s}
	}},
}

// latestVersion returns the newest migration version of c's backend: the
// dialects have migrations of their own.
func latestVersion(t *testing.T, c *cli) int {
	t.Helper()
	var ms []stores.Migration
	var err error
	switch c.backend {
	case "postgres":
		ms, err = pgxstore.Migrations(nil)
	case "mariadb":
		ms, err = mysqlstore.Migrations(nil)
	default:
		ms, err = sqlitestore.Migrations(nil)
	}
	require.NoError(t, err)
	return ms[len(ms)-1].Version
}

func eachBackend(t *testing.T, f func(t *testing.T, c *cli, s seeder)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			c, s := b.open(t)
			f(t, c, s)
		})
	}
}

// seed migrates and writes the rows every golden test shows: two
// consumers, three events, four outbox rows of which two are dead, one
// done and one pending.
func seed(t *testing.T, c *cli, s seeder) {
	t.Helper()
	c.ok("migrate", "up")
	at := func(hh, mm int) time.Time { return time.Date(2026, 1, 2, hh, mm, 0, 0, time.UTC) }
	out := func(kind, key string, created time.Time) ackgap.OutboxEntry {
		return ackgap.OutboxEntry{Kind: kind, IdempotencyKey: key, Payload: []byte(`{"secret":"card-4242"}`),
			Headers: map[string]string{"content-type": "application/json"}, Now: created, AvailableAt: created}
	}
	s.inbox(t, "audit", "order-1", at(2, 0))
	s.inbox(t, "billing", "order-1", at(3, 10), out("charge", "charge:order-1", at(3, 10)), out("email", "email:order-1", at(3, 10)))
	s.inbox(t, "billing", "order-2", at(3, 50), out("charge", "charge:order-2", at(3, 50)))
	s.inbox(t, "billing", "order-3", at(3, 58), out("charge", "charge:order-3", at(3, 58)))
	ctx := context.Background()
	claimed, err := s.ClaimOutbox(ctx, &stores.OutboxClaimParams{Limit: 10, Lease: time.Minute, Now: at(3, 55)})
	require.NoError(t, err)
	require.Len(t, claimed.Rows, 3, "order-3's row is not due at 03:55")
	for _, r := range claimed.Rows {
		switch r.IdempotencyKey {
		case "email:order-1":
			_, err = s.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Now: at(3, 56), Rows: []stores.OutboxSettlement{
				{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxDone}}})
		case "charge:order-1":
			_, err = s.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
				{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxDead, LastError: "card declined (permanent)"}}})
		default:
			_, err = s.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
				{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxDead, LastError: "payment gateway: 503 after 8 attempts"}}})
		}
		require.NoError(t, err)
	}
}

// seedWaiting adds, after seed, two pending rows that are not due at t0:
// charge:order-4, written held for direct dispatch at 03:59 with its hold
// ending at 04:01 (its process died: nothing recorded it), and
// charge:order-5, tried at 03:57:30 and waiting out a retry backoff until
// 04:07:30.
func seedWaiting(t *testing.T, s seeder) {
	t.Helper()
	at := func(hh, mm, ss int) time.Time { return time.Date(2026, 1, 2, hh, mm, ss, 0, time.UTC) }
	out := func(key string, created, available time.Time) ackgap.OutboxEntry {
		return ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: key, Payload: []byte(`{}`), Now: created, AvailableAt: available}
	}
	s.inbox(t, "billing", "order-4", at(3, 59, 0), out("charge:order-4", at(3, 59, 0), at(4, 1, 0)))
	s.inbox(t, "billing", "order-5", at(3, 57, 0), out("charge:order-5", at(3, 57, 0), at(3, 57, 0)))
	ctx := context.Background()
	claimed, err := s.ClaimOutbox(ctx, &stores.OutboxClaimParams{Limit: 10, Lease: time.Minute, Now: at(3, 57, 30)})
	require.NoError(t, err)
	require.Len(t, claimed.Rows, 1, "only order-5's row is due at 03:57:30")
	r := claimed.Rows[0]
	require.Equal(t, "charge:order-5", r.IdempotencyKey)
	res, err := s.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Now: at(3, 57, 30), Rows: []stores.OutboxSettlement{
		{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxPending, Delay: 10 * time.Minute, LastError: "payment gateway: 503"}}})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, res.Changed)
}

// schemaVersionLine matches status's first line, which differs per dialect.
var schemaVersionLine = regexp.MustCompile(`(?m)^schema version (\d+) of (\d+)`)

// golden compares got with testdata/name, or rewrites it with -update.
// Both backends compare with the same file: they must print the same.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), got, "golden file %s (go test -update rewrites it)", path)
}

func TestMigrate(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, _ seeder) {
		out := c.ok("migrate", "up", "--target", "2")
		require.Contains(t, out, "applied 2 migration(s); version is 2")

		latest := latestVersion(t, c)
		r := c.run("migrate", "status")
		require.Equal(t, exitPending, r.code, "a pending migration exits 4: %s", r.stderr)
		require.Regexp(t, `(?m)^3\s+\w+\s+pending$`, r.stdout)
		require.Contains(t, r.stdout, fmt.Sprintf("version 2 of %d; %d pending", latest, latest-2))

		// status on a schema behind the code: the fix, and exit 4 as
		// "migrate status" (issue 25).
		r = c.run("status")
		require.Equal(t, exitPending, r.code, "status on a schema behind the code exits 4: %s", r.stderr)
		require.Contains(t, r.stderr, fmt.Sprintf(`schema version 2 of %d: run "ackgap migrate up"`, latest))
		c.json(&struct{}{}, exitPending, "status")

		out = c.ok("migrate", "up", "--dry-run")
		require.Contains(t, out, fmt.Sprintf("would apply %d migration(s); version is 2", latest-2))
		c.json(&struct{}{}, exitPending, "migrate", "status")

		out = c.ok("migrate", "up")
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+\w+$`, latest), out)
		require.Contains(t, c.ok("migrate", "up"), fmt.Sprintf("applied 0 migration(s); version is %d", latest), "migrating again changes nothing")

		var st struct {
			Version, Latest, Pending int
			Migrations               []migrationView
		}
		c.json(&st, exitOK, "migrate", "status")
		require.Equal(t, latest, st.Version)

		// Nothing due: the age is null, as every "none" in the JSON
		// (issue 25), not 0.
		r = c.run("status", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Regexp(t, `"oldest_due_age_seconds":\s*null`, r.stdout)
		require.NotContains(t, r.stdout, "oldest_due_at")
		require.Equal(t, latest, st.Latest)
		require.Zero(t, st.Pending)
		require.Len(t, st.Migrations, latest)
		for _, m := range st.Migrations {
			require.True(t, m.Applied)
			require.NotNil(t, m.AppliedAt)
		}
	})
}

func TestMigrateSQL(t *testing.T) {
	c := &cli{t: t, env: map[string]string{}}
	out := c.ok("migrate", "sql", "--dsn", "postgres://nowhere.invalid/db", "--schema", "ops", "--prefix", "app_")
	want, err := pgxstore.Migrations(&pgxstore.Config{Schema: "ops", TablePrefix: "app_"})
	require.NoError(t, err)
	for _, m := range want {
		require.Contains(t, out, m.UpSQL)
	}
	require.Contains(t, out, "-- ackgap migration 001_inbox_outbox (up)")
	require.Contains(t, out, `"ops"."app_outbox"`)

	out = c.ok("migrate", "sql", "--dsn", "sqlite:whatever.db", "--down", "--version", "3")
	lite, err := sqlitestore.Migrations(nil)
	require.NoError(t, err)
	require.Equal(t, "-- ackgap migration 003_inbox_trace_parent (down)\n"+lite[2].DownSQL+"\n", out)
	_, statErr := os.Stat("whatever.db")
	require.True(t, os.IsNotExist(statErr), "migrate sql connects to nothing")

	var views []struct{ Version int }
	c.json(&views, exitOK, "migrate", "sql", "--dsn", "sqlite:x.db", "--down")
	require.Equal(t, lite[len(lite)-1].Version, views[0].Version, "down runs newest first")
	require.Equal(t, exitUsage, c.run("migrate", "sql", "--dsn", "sqlite:x.db", "--version", "9").code)
}

func TestStatus(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		seed(t, c, s)
		seedWaiting(t, s)
		// The dialects have their own migrations (PostgreSQL has one more):
		// the version line must say "current", the rest is the same.
		out := c.ok("status")
		m := schemaVersionLine.FindStringSubmatch(out)
		require.Len(t, m, 3, "status starts with the schema version: %s", out)
		require.Equal(t, m[1], m[2], "migrated to the newest version")
		golden(t, "status.golden", schemaVersionLine.ReplaceAllString(out, "schema version N of N"))

		var v statusView
		c.json(&v, exitOK, "status", "--window", "30m")
		require.Equal(t, t0, v.Now)
		require.Equal(t, 1800.0, v.WindowSeconds)
		require.Len(t, v.Inbox, 2)
		require.Equal(t, "billing", v.Inbox[1].Consumer)
		require.EqualValues(t, 5, v.Inbox[1].Rows)
		require.EqualValues(t, 4, v.Inbox[1].Recent, "order-2 to order-5 within 30 minutes")
		require.Equal(t, map[string]int64{"dead": 2, "done": 1, "pending": 3}, v.OutboxTotals)
		require.NotNil(t, v.OldestDueAt)
		require.NotNil(t, v.OldestDueAge)
		require.Equal(t, 120.0, *v.OldestDueAge, "order-3's row, due at 03:58; order-4's is held, order-5's backs off")
		require.EqualValues(t, 1, v.Held)
		require.Equal(t, time.Date(2026, 1, 2, 4, 1, 0, 0, time.UTC), *v.HeldUntil)
		require.EqualValues(t, 1, v.Backoff)
		require.Equal(t, outboxStatsView{Kind: "charge", State: "pending", Rows: 3, OldestCreatedAt: time.Date(2026, 1, 2, 3, 57, 0, 0, time.UTC),
			Held: 1, Backoff: 1}, v.Outbox[1])
		latest := latestVersion(t, c)
		require.Equal(t, &migrationStatusSum{Version: latest, Latest: latest}, v.Migrations)
	})
}

func TestEvent(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		seed(t, c, s)
		golden(t, "event.golden", c.ok("event", "order-1"))

		c.env["ACKGAP_TRACE_URL"] = "http://jaeger:16686/trace/{trace_id}"
		var v eventView
		c.json(&v, exitOK, "event", "order-1", "--consumer", "billing")
		require.Len(t, v.Applied, 1)
		require.Equal(t, "billing", v.Applied[0].Consumer)
		require.Equal(t, "http://jaeger:16686/trace/0af7651916cd43dd8448eb211c80319c", v.Applied[0].TraceURL)
		require.Equal(t, time.Date(2026, 1, 2, 3, 10, 0, 0, time.UTC), v.Applied[0].AppliedAt)
		require.Len(t, v.Applied[0].PayloadSHA256, 64)
		require.Len(t, v.Outbox, 2)
		require.Nil(t, v.Outbox[0].Payload, "no payload unless asked for")

		r := c.run("event", "order-404")
		require.Equal(t, exitNotFound, r.code)
		require.Contains(t, r.stdout, "no inbox or outbox row: never applied, pruned, or dead-lettered")
		require.Contains(t, r.stdout, "dead-letter topic or queue", "the third place to look (issue 25)")
		require.Equal(t, exitUsage, c.run("event").code)
	})
}

func TestOutboxListShow(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		seed(t, c, s)
		golden(t, "outbox-list-dead.golden", c.ok("outbox", "list", "--state", "dead"))
		golden(t, "outbox-show.golden", c.ok("outbox", "show", "1"))

		var rows []outboxRowView
		c.json(&rows, exitOK, "outbox", "list")
		require.Len(t, rows, 4)
		keys := func(args ...string) []string {
			var rows []outboxRowView
			c.json(&rows, exitOK, append([]string{"outbox", "list"}, args...)...)
			out := []string{}
			for _, r := range rows {
				out = append(out, r.IdempotencyKey)
			}
			return out
		}
		require.Equal(t, []string{"email:order-1"}, keys("--kind", "email"))
		require.Equal(t, []string{"charge:order-2", "charge:order-3"}, keys("--key-prefix", "charge:order-", "--after-id", "1"))
		require.Equal(t, []string{"charge:order-1", "email:order-1"}, keys("--older-than", "30m"))
		require.Equal(t, []string{"charge:order-3"}, keys("--state", "pending,claimed"))
		require.Equal(t, []string{"charge:order-1"}, keys("--limit", "1"))

		var one outboxRowView
		c.json(&one, exitOK, "outbox", "show", "1", "--payload")
		require.Equal(t, `{"secret":"card-4242"}`, *one.Payload)
		require.Equal(t, "card declined (permanent)", one.LastError)

		r := c.run("outbox", "show", "999")
		require.Equal(t, exitNotFound, r.code)
		require.Contains(t, r.stderr, "no outbox row 999")
		require.Equal(t, exitUsage, c.run("outbox", "show", "x").code)
		require.Equal(t, exitUsage, c.run("outbox", "list", "--state", "gone").code)
	})
}

// TestOutboxListHeld: --state held lists the pending rows never tried and
// not due yet, marked "pending (held)" in every table and "held" in JSON;
// a row waiting out a backoff is not held.
func TestOutboxListHeld(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		seed(t, c, s)
		seedWaiting(t, s)
		golden(t, "outbox-list-held.golden", c.ok("outbox", "list", "--state", "held"))

		var rows []outboxRowView
		c.json(&rows, exitOK, "outbox", "list", "--state", "pending")
		held := map[string]bool{}
		for _, r := range rows {
			held[r.IdempotencyKey] = r.Held
		}
		require.Equal(t, map[string]bool{"charge:order-3": false, "charge:order-4": true, "charge:order-5": false}, held)
		c.json(&rows, exitOK, "outbox", "list", "--state", "held", "--kind", "email")
		require.Empty(t, rows)

		require.Contains(t, c.ok("outbox", "show", "5"), "pending (held)")
		require.Regexp(t, `(?m)^state\s+pending$`, c.ok("outbox", "show", "6"), "order-5's row backs off")
		require.Contains(t, c.ok("event", "order-4"), "pending (held)")

		r := c.run("outbox", "list", "--state", "held,dead")
		require.Equal(t, exitUsage, r.code)
		require.Contains(t, r.stderr, "--state held is a part of the pending rows: give it alone")
	})
}

// TestStatusHeldOnly: after a crash only held rows are left: status says
// when they become due instead of "caught up".
func TestStatusHeldOnly(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		c.ok("migrate", "up")
		hold := t0.Add(30 * time.Second)
		for _, id := range []string{"order-1", "order-2"} {
			s.inbox(t, "billing", id, t0.Add(-30*time.Second), ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + id,
				Payload: []byte(`{}`), Now: t0.Add(-30 * time.Second), AvailableAt: hold})
		}
		out := c.ok("status")
		require.Contains(t, out, "pending 2, claimed 0, done 0, dead 0\nof the pending: 0 due, 2 held, 0 waiting out a retry backoff\n")
		require.Contains(t, out, "held for dispatch (or delayed): 2, the first held until 2026-01-02T04:00:30Z (in 30s)\n")
		require.Contains(t, out, "oldest due row: none yet (held rows become due from 2026-01-02T04:00:30Z")
		require.NotContains(t, out, "caught up")
	})
}

// TestRedriveTwice: a dry run changes nothing; the redrive moves the dead
// rows back to pending with a progress bar; a second redrive changes
// nothing.
func TestRedriveTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		seed(t, c, s)
		dry := c.run("outbox", "redrive", "--dry-run")
		require.Equal(t, exitOK, dry.code, dry.stderr)
		golden(t, "outbox-redrive-dry-run.golden", dry.stdout)
		deadKeys := func() int {
			res, err := s.FindOutbox(context.Background(), &stores.FindOutboxParams{States: []stores.OutboxState{stores.OutboxDead}})
			require.NoError(t, err)
			return len(res.Rows)
		}
		require.Equal(t, 2, deadKeys(), "a dry run changes nothing")

		first := c.run("outbox", "redrive", "--batch", "1")
		require.Equal(t, exitOK, first.code, first.stderr)
		require.Equal(t, "2 row(s) redriven (2 matched)\n", first.stdout)
		require.Contains(t, first.stderr, "2/2 rows redriven", "the progress bar is on stderr")
		require.Zero(t, deadKeys())
		res, err := s.FindOutbox(context.Background(), &stores.FindOutboxParams{IDs: []int64{1}})
		require.NoError(t, err)
		require.Equal(t, stores.OutboxPending, res.Rows[0].State)
		require.Zero(t, res.Rows[0].Attempts)

		var second bulkView
		c.json(&second, exitOK, "outbox", "redrive")
		require.Equal(t, bulkView{}, second, "a second redrive changes nothing")
	})
}

func TestPrune(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		seed(t, c, s)
		require.Equal(t, exitUsage, c.run("outbox", "prune").code, "--older-than is required")
		require.Equal(t, exitUsage, c.run("outbox", "prune", "--older-than", "1h", "--state", "pending").code)

		var dry bulkView
		c.json(&dry, exitOK, "outbox", "prune", "--older-than", "30m", "--dry-run")
		require.True(t, dry.DryRun)
		require.EqualValues(t, 1, dry.Matched)
		require.Equal(t, "email:order-1", dry.Rows[0].IdempotencyKey)

		// A dry run counts every row and lists at most --limit (issue 25).
		c.json(&dry, exitOK, "outbox", "prune", "--state", "dead", "--older-than", "0s", "--dry-run", "--limit", "1")
		require.EqualValues(t, 2, dry.Matched, "both dead rows counted")
		require.Len(t, dry.Rows, 1, "one listed")
		out := c.ok("outbox", "prune", "--state", "dead", "--older-than", "0s", "--dry-run", "--limit", "1")
		require.Contains(t, out, "dry run: 2 row(s) would be deleted (the first 1 shown; --limit shows more)")
		require.Equal(t, 3, strings.Count(out, "\n"), "header, one row, the count: %s", out)
		require.Equal(t, "dry run: 2 row(s) would be redriven\n",
			c.ok("outbox", "redrive", "--dry-run", "--limit", "0"))
		require.Equal(t, exitUsage, c.run("outbox", "prune", "--older-than", "0s", "--dry-run", "--limit", "-1").code)

		require.Equal(t, "1 row(s) deleted (1 matched)\n", c.ok("outbox", "prune", "--older-than", "30m"))
		require.Equal(t, "0 row(s) deleted (0 matched)\n", c.ok("outbox", "prune", "--older-than", "30m"), "twice changes nothing")
		require.Equal(t, "1 row(s) deleted (1 matched)\n", c.ok("outbox", "prune", "--state", "dead", "--kind", "charge", "--key-prefix", "charge:order-2", "--older-than", "0s"))
		var rows []outboxRowView
		c.json(&rows, exitOK, "outbox", "list")
		require.Len(t, rows, 2, "the pending row and the other dead row stay")
	})
}

// TestUsageAndSecrets: bad usage exits 2 with a clear message; a DSN's
// password never appears in the output, even when connecting fails.
func TestUsageAndSecrets(t *testing.T) {
	c := &cli{t: t, env: map[string]string{}}
	for _, args := range [][]string{
		{"status"},
		{"status", "--dsn", "oracle://x"},
		{"status", "--dsn", "mysql://root@127.0.0.1:1/x", "--schema", "s"},
		{"status", "--dsn", "sqlite:a.db", "--schema", "s"},
		{"nope"},
		{"status", "--window", "0s", "--dsn", "sqlite:a.db"},
	} {
		r := c.run(args...)
		require.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "ackgap: ")
	}
	for _, dsn := range []string{"oracle://root:hunter2@db/x", "host=db user=app password=hunter2"} {
		r := c.run("status", "--dsn", dsn)
		require.Equal(t, exitUsage, r.code)
		require.NotContains(t, r.stderr, "hunter2")
	}
	// A MariaDB DSN is supported: nothing listens on port 1, so it fails
	// to connect (exit 1), without echoing the password.
	for _, dsn := range []string{"mysql://root:hunter2@127.0.0.1:1/x", "root:hunter2@tcp(127.0.0.1:1)/x"} {
		r := c.run("status", "--dsn", dsn)
		require.Equal(t, exitFailed, r.code, r.stderr)
		require.NotContains(t, r.stderr, "hunter2")
	}
	r := c.run("status", "--dsn", "postgres://app:hunter2@db:notaport/x")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.NotContains(t, r.stderr, "hunter2")

	r = c.run("status", "--dsn", "postgres://app:hunter2@127.0.0.1:1/x?connect_timeout=5")
	require.Equal(t, exitFailed, r.code)
	require.NotContains(t, r.stderr+r.stdout, "hunter2")

	r = c.run("status", "--dsn", "sqlite:"+filepath.Join(t.TempDir(), "missing.db"))
	require.Equal(t, exitFailed, r.code)
	require.Contains(t, r.stderr, `run "ackgap migrate up" to create it`)

	// A file in a directory that does not exist: neither status nor
	// migrate up can open it, and both say why.
	for _, cmd := range [][]string{{"status"}, {"migrate", "up"}} {
		r = c.run(append(cmd, "--dsn", "sqlite:"+filepath.Join(t.TempDir(), "no-such-dir", "x.db"))...)
		require.Equal(t, exitFailed, r.code, "%v: %s", cmd, r.stderr)
		require.Contains(t, r.stderr, "its directory", cmd)
		require.NotContains(t, r.stderr, `run "ackgap migrate up"`, cmd)
	}

	r = c.run("status", "--dsn", testdb.URL(), "--schema", "no_such_schema_here")
	require.Equal(t, exitFailed, r.code)
	require.Contains(t, r.stderr, `no ackgap tables (prefix "ackgap_" in schema "no_such_schema_here"): run "ackgap migrate up" first, or check --schema and --prefix`)
	// doctor says the same of a mistyped --schema, not "version 0 of N".
	r = c.run("doctor", "--dsn", testdb.URL(), "--schema", "no_such_schema_here")
	require.Equal(t, exitDoctorFailed, r.code, r.stderr)
	require.Contains(t, r.stdout, `fail  schema version: no ackgap tables (prefix "ackgap_" in schema "no_such_schema_here")`)
	require.Contains(t, r.stdout, `fix: run "ackgap migrate up" first, or check --schema and --prefix`)
	require.NotContains(t, r.stdout, "version 0 of")

	help := c.ok("outbox", "redrive", "--help")
	require.Contains(t, help, "Examples:")
	require.Contains(t, help, "--dry-run")
}

// TestEveryCommandHasExample: --help of every command shows an example.
func TestEveryCommandHasExample(t *testing.T) {
	a := &app{env: &env{getenv: func(string) string { return "" }, now: time.Now}}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Name() != "help" && cmd.Name() != "completion" && !cmd.Hidden {
			require.NotEmpty(t, cmd.Example, "ackgap %s has no example", cmd.CommandPath())
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCommand())
}
