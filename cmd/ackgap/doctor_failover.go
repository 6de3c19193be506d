package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ackgap/ackgap/stores/pgxstore"
)

// lostOnFailover says, for both brokers, what happens to an event whose
// commit the database forgets after ackgap acked it: the broker does not
// deliver it again.
const lostOnFailover = "on Kafka the group's committed offset is already past such an event and on SQS its message is deleted, " +
	"so nothing redelivers it: the event is lost and nothing reports it"

// doctorFailover checks what a failover to a standby, or a crash, can take
// back of what ackgap acknowledged, from the PostgreSQL server's
// replication settings.
func doctorFailover(ctx context.Context, s *pgxstore.Store) check {
	r, err := s.Replication(ctx, nil)
	if err != nil {
		return check{Name: "database failover", Status: checkWarn, Detail: "cannot read the replication settings: " + err.Error(),
			Fix: "grant the role pg_monitor (or pg_read_all_stats) to see pg_stat_replication, or check the settings by hand"}
	}
	return failoverCheck(r)
}

// failoverCheck is the verdict of doctorFailover on r.
func failoverCheck(r *pgxstore.ReplicationResult) check {
	c := check{Name: "database failover", Status: checkPass}
	var names []string
	var maxLag time.Duration
	for _, sb := range r.Standbys {
		names = append(names, fmt.Sprintf("%s (%s, %s)", cmp.Or(sb.Name, "unnamed"), cmp.Or(sb.SyncState, "sync state hidden"), cmp.Or(sb.State, "state hidden")))
		maxLag = max(maxLag, sb.ReplayLag)
	}
	switch {
	case r.InRecovery:
		c.Status, c.Detail = checkFail, "this server is a standby (pg_is_in_recovery): ackgap writes its inbox, state and outbox rows to the primary"
		c.Fix = "point --dsn and the consumers at the primary"
	case r.SynchronousCommit == "off":
		c.Status = checkWarn
		c.Detail = "synchronous_commit = off: COMMIT returns before its WAL is flushed, so a crash of this server alone takes back the last commits (up to 3 x wal_writer_delay) after ackgap acked them; " + lostOnFailover
		c.Fix = "ALTER ROLE <ackgap's role> SET synchronous_commit = on (the PostgreSQL default)"
	case len(r.Standbys) > 0 && r.Synchronous():
		c.Detail = fmt.Sprintf("synchronous replication (synchronous_commit = %s, synchronous_standby_names = %q) to %d standby(s): %s; promoting a synchronous standby keeps every event ackgap acked",
			r.SynchronousCommit, r.SynchronousStandbyNames, len(r.Standbys), strings.Join(names, ", "))
	case len(r.Standbys) > 0:
		c.Status = checkWarn
		c.Detail = fmt.Sprintf("%d asynchronous standby(s): %s, replay lag up to %s; promoting one takes back the commits it had not received, after ackgap acked them; %s",
			len(r.Standbys), strings.Join(names, ", "), maxLag.Round(time.Millisecond), lostOnFailover)
		c.Fix = "for SQS consumers especially: set synchronous_standby_names (e.g. 'ANY 1 (*)') with synchronous_commit = on, or accept that a failover loses the events acked within the replay lag (README: Database failover and restore)"
	default:
		c.Detail = "no standby streams from this server (one fed by WAL archive shipping does not show here): a restore to a point in time takes back the commits after it; " + lostOnFailover
	}
	return c
}
