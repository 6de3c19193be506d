package pgxstore

import (
	"context"
	"time"
)

// ReplicationParams are the parameters of [Store.Replication]. It has no
// fields yet; a nil pointer is fine.
type ReplicationParams struct{}

// ReplicationResult is what the server says about the durability of a
// commit: how far a commit has gone when COMMIT returns, and so what a
// failover to a standby, or a restore, can take back. ackgap acks a message
// only after its commit returns; a commit the database later forgets is an
// event the broker no longer redelivers.
type ReplicationResult struct {
	// InRecovery is pg_is_in_recovery(): the server is a standby (or is
	// replaying WAL). ackgap cannot write to it.
	InRecovery bool
	// SynchronousCommit is the session's synchronous_commit: on (the
	// PostgreSQL default), remote_apply, remote_write, local or off. With
	// off, COMMIT returns before the WAL is flushed, so even a crash of this
	// server loses the last commits (up to three times wal_writer_delay,
	// PostgreSQL docs, "Asynchronous Commit").
	SynchronousCommit string
	// SynchronousStandbyNames is synchronous_standby_names; empty means
	// every standby is asynchronous.
	SynchronousStandbyNames string
	// Standbys are the rows of pg_stat_replication: the standbys streaming
	// from this server. Columns a role without pg_read_all_stats may not
	// see are empty.
	Standbys []Standby
}

// Standby is one row of pg_stat_replication.
type Standby struct {
	// Name is application_name (the standby's cluster_name or the
	// primary_conninfo's application_name).
	Name string
	// State is the WAL sender's state: streaming, catchup, backup, ...
	State string
	// SyncState is async, potential, sync or quorum. Only sync and quorum
	// standbys make COMMIT wait for them.
	SyncState string
	// ReplayLag is replay_lag: how long ago the last WAL the standby has
	// replayed was flushed here; 0 when unknown or caught up.
	ReplayLag time.Duration
}

// Synchronous reports whether COMMIT waits for at least one standby: a
// sync or quorum standby is streaming and synchronous_commit is on,
// remote_apply or remote_write. Then promoting that standby keeps every
// commit this server acknowledged (with remote_write, unless the standby's
// operating system also crashed; PostgreSQL docs, "synchronous_commit").
func (r *ReplicationResult) Synchronous() bool {
	switch r.SynchronousCommit {
	case "on", "remote_apply", "remote_write":
	default:
		return false
	}
	for _, s := range r.Standbys {
		if s.SyncState == "sync" || s.SyncState == "quorum" {
			return true
		}
	}
	return false
}

// Replication reads the server's replication settings and its streaming
// standbys with the store's pool: pg_is_in_recovery(), synchronous_commit,
// synchronous_standby_names and pg_stat_replication. It needs no privilege
// beyond connecting; without pg_read_all_stats (or pg_monitor) a role may
// see empty columns in pg_stat_replication. Errors are classified as the
// store's other errors are (see docs/errors.md).
func (s *Store) Replication(ctx context.Context, _ *ReplicationParams) (*ReplicationResult, error) {
	res := &ReplicationResult{}
	if err := s.pool.QueryRow(ctx, `SELECT pg_is_in_recovery(),
current_setting('synchronous_commit'), current_setting('synchronous_standby_names')`).
		Scan(&res.InRecovery, &res.SynchronousCommit, &res.SynchronousStandbyNames); err != nil {
		return nil, interpretError("replication", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT coalesce(application_name, ''), coalesce(state, ''),
coalesce(sync_state, ''), coalesce(extract(epoch FROM replay_lag), 0)::float8 FROM pg_stat_replication`)
	if err != nil {
		return nil, interpretError("replication", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sb Standby
		var lag float64
		if err := rows.Scan(&sb.Name, &sb.State, &sb.SyncState, &lag); err != nil {
			return nil, interpretError("replication", err)
		}
		sb.ReplayLag = time.Duration(lag * float64(time.Second))
		res.Standbys = append(res.Standbys, sb)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError("replication", err)
	}
	return res, nil
}
