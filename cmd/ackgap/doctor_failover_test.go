package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// TestDoctorFailoverVerdicts: what the server says decides pass, warn or
// fail, and every warning names both brokers' loss.
func TestDoctorFailoverVerdicts(t *testing.T) {
	async := pgxstore.Standby{Name: "replica1", State: "streaming", SyncState: "async", ReplayLag: 1500 * time.Millisecond}
	sync := pgxstore.Standby{Name: "replica2", State: "streaming", SyncState: "sync"}
	for _, tc := range []struct {
		name   string
		r      pgxstore.ReplicationResult
		status string
		detail string
	}{
		{"standalone", pgxstore.ReplicationResult{SynchronousCommit: "on"}, checkPass, "no standby streams from this server"},
		{"standby", pgxstore.ReplicationResult{InRecovery: true, SynchronousCommit: "on"}, checkFail, "this server is a standby"},
		{"commit off", pgxstore.ReplicationResult{SynchronousCommit: "off", Standbys: []pgxstore.Standby{sync}}, checkWarn, "synchronous_commit = off"},
		{"async standby", pgxstore.ReplicationResult{SynchronousCommit: "on", Standbys: []pgxstore.Standby{async}}, checkWarn,
			"1 asynchronous standby(s): replica1 (async, streaming), replay lag up to 1.5s"},
		{"sync standby", pgxstore.ReplicationResult{SynchronousCommit: "on", SynchronousStandbyNames: "ANY 1 (*)", Standbys: []pgxstore.Standby{async, sync}}, checkPass,
			"keeps every event ackgap acked"},
		// local: COMMIT does not wait for the sync standby.
		{"sync standby, commit local", pgxstore.ReplicationResult{SynchronousCommit: "local", SynchronousStandbyNames: "*", Standbys: []pgxstore.Standby{sync}}, checkWarn,
			"asynchronous standby"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := failoverCheck(&tc.r)
			require.Equal(t, tc.status, c.Status, c.Detail)
			require.Contains(t, c.Detail, tc.detail)
			if c.Status == checkWarn {
				require.NotEmpty(t, c.Fix)
			}
		})
	}
}

// TestDoctorFailoverServer reads this machine's PostgreSQL: a server with
// no standby passes, and the same server with synchronous_commit off for
// the doctor's session (a runtime parameter in the DSN) warns.
func TestDoctorFailoverServer(t *testing.T) {
	pool, schema := testdb.Schema(t, 0)
	s, err := pgxstore.New(pool, &pgxstore.Config{Schema: schema})
	require.NoError(t, err)
	r, err := s.Replication(context.Background(), nil)
	require.NoError(t, err)
	require.False(t, r.InRecovery)
	require.NotEmpty(t, r.SynchronousCommit)

	for _, tc := range []struct {
		dsn    string
		status string
	}{
		{testdb.URL(), failoverCheck(r).Status},
		{withParam(testdb.URL(), "synchronous_commit=off"), checkWarn},
	} {
		c := &cli{t: t, env: map[string]string{"ACKGAP_DSN": tc.dsn}, flags: []string{"--schema", schema}, backend: "postgres"}
		c.ok("migrate", "up")
		var rep doctorReport
		c.json(&rep, exitOK, "doctor")
		require.Equal(t, []string{tc.status}, rep.status(t, "database failover"), "%+v", rep.Checks)
	}
}

// withParam adds a query parameter to a URL DSN.
func withParam(dsn, kv string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}
