package outbox_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

type sqlTx = sql.Tx

// The test binary re-executes itself as a relay process (childMain) when
// childEnv is set; the other variables locate its database and provider.
const (
	childEnv      = "ACKGAP_OUTBOX_CHILD"
	envStore      = "ACKGAP_OUTBOX_STORE"
	envSQLitePath = "ACKGAP_OUTBOX_SQLITE_PATH"
	envPGSchema   = "ACKGAP_OUTBOX_PG_SCHEMA"
	envProvider   = "ACKGAP_OUTBOX_PROVIDER_URL"
	// childLease is the child relay's lease: the restarted relay takes the
	// row over once it lapsed.
	childLease = time.Second
	// calledLine starts the line the child prints once the provider
	// answered, before the outcome is recorded.
	calledLine = "CALLED "
)

// childMain is a relay process whose effect calls the provider and then,
// before the relay can record the outcome, prints calledLine and hangs:
// the parent kills it there with SIGKILL. It returns an exit code.
func childMain() int {
	ctx := context.Background()
	var s stores.OutboxStore
	switch os.Getenv(envStore) {
	case "sqlite":
		st, err := sqlitestore.Open(ctx, os.Getenv(envSQLitePath), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer st.Close()
		s = st
	case "postgres":
		cfg, err := pgxpool.ParseConfig(testdb.URL())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = os.Getenv(envPGSchema)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer pool.Close()
		st, err := pgxstore.New(pool, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		s = st
	default:
		fmt.Fprintln(os.Stderr, "unknown store")
		return 2
	}
	call := outbox.HTTP(nil, os.Getenv(envProvider))
	relay, err := outbox.New(s, &outbox.Config{
		Lease: childLease, PollInterval: 20 * time.Millisecond,
		Effects: map[string]outbox.Effect{"charge": func(ctx context.Context, row stores.OutboxRow) error {
			if err := call(ctx, row); err != nil {
				return err
			}
			fmt.Printf("%s%s\n", calledLine, row.IdempotencyKey)
			time.Sleep(time.Minute) // killed here, between the call and "mark done"
			return nil
		}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_ = relay.Run(ctx)
	return 1
}

// TestRelayKilledAfterCall: a relay process is killed with SIGKILL after
// the provider charged and before the relay recorded "done". The row stays
// claimed; once its lease lapsed, the restarted relay calls the provider
// again with the same Idempotency-Key, the provider answers with the
// original result, and the customer is charged exactly once (docs/design.md
// invariant 7).
func TestRelayKilledAfterCall(t *testing.T) {
	bothStores(t,
		func(t *testing.T, b *backend[*sqlTx]) { relayKilledAfterCall(t, b) },
		func(t *testing.T, b *backend[pgx.Tx]) { relayKilledAfterCall(t, b) })
}

func relayKilledAfterCall[TTx any](t *testing.T, b *backend[TTx]) {
	p := newProvider(t)
	id := insert(t, b.store, charge("charge:o1"))[0]

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(b.env, childEnv+"=1", envProvider+"="+p.url())...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	called := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if key, ok := strings.CutPrefix(sc.Text(), calledLine); ok {
				called <- key
			}
		}
		close(called)
	}()
	select {
	case key, ok := <-called:
		require.True(t, ok, "the child exited before the call; stderr: %s", stderr.String())
		require.Equal(t, "charge:o1", key)
	case <-time.After(30 * time.Second):
		t.Fatalf("the child relay did not call the provider; stderr: %s", stderr.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err = cmd.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Equal(t, syscall.SIGKILL, exitErr.Sys().(syscall.WaitStatus).Signal())

	calls, charged := p.counts()
	require.Equal(t, []int{1, 1}, []int{calls, charged}, "the provider charged before the crash")
	r := rowOf(t, b.store, id)
	require.Equal(t, stores.OutboxClaimed, r.State, "the outcome was never recorded")
	require.Equal(t, 1, r.Attempts)

	// Restart: a new relay takes the row over once the lease lapsed.
	reps := newReports()
	relay, err := outbox.New(b.store, &outbox.Config{
		Lease: childLease, PollInterval: 20 * time.Millisecond, Observer: reps.observe,
		Effects: map[string]outbox.Effect{"charge": p.effect()},
	})
	require.NoError(t, err)
	stop := running(t, relay)
	rep := reps.next(t)
	stop()
	require.Equal(t, outbox.OutcomeDone, rep.Outcome)
	require.Equal(t, 2, rep.Row.Attempts, "the killed attempt counts")

	got := p.callsOf("charge:o1")
	require.Len(t, got, 2, "the effect was called again after the crash")
	require.False(t, got[0].Replayed)
	require.True(t, got[1].Replayed, "the provider recognised the key")
	require.Equal(t, got[0].Response, got[1].Response, "and answered with the original result")
	require.Equal(t, got[0].Body, got[1].Body)
	_, charged = p.counts()
	require.Equal(t, 1, charged, "exactly one charge")
	require.Equal(t, stores.OutboxDone, rowOf(t, b.store, id).State)
}
