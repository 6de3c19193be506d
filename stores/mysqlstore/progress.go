package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/ackgap/ackgap/stores"
)

// Progress returns the progress rows (migration 004) of consumer ("" = every consumer),
// ordered by consumer, topic and partition.
func (s *Store) Progress(ctx context.Context, consumer string) ([]stores.ProgressRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT consumer, topic, "partition", watermark, updated_at FROM `+s.names.Progress+`
WHERE ? = '' OR consumer = ? ORDER BY consumer, topic, "partition"`, consumer, consumer)
	if err != nil {
		return nil, interpretError("read progress rows", err)
	}
	defer rows.Close()
	var out []stores.ProgressRow
	for rows.Next() {
		var p stores.ProgressRow
		var at int64
		if err := rows.Scan(&p.Consumer, &p.Topic, &p.Partition, &p.Watermark, &at); err != nil {
			return nil, interpretError("read progress rows", err)
		}
		p.UpdatedAt = time.UnixMicro(at)
		out = append(out, p)
	}
	return out, interpretError("read progress rows", rows.Err())
}

// ProgressReader returns the stored watermark of consumer's partition, for
// kafkabroker.SubscriberConfig.Progress: ok false when no row is stored.
func (s *Store) ProgressReader(consumer string) func(ctx context.Context, topic string, partition int32) (int64, bool, error) {
	return func(ctx context.Context, topic string, partition int32) (int64, bool, error) {
		var w int64
		err := s.db.QueryRowContext(ctx, `SELECT watermark FROM `+s.names.Progress+` WHERE consumer = ? AND topic = ? AND "partition" = ?`,
			consumer, topic, partition).Scan(&w)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, interpretError("read progress row", err)
		}
		return w, true, nil
	}
}

// pendingProgress is what a transaction writes to the progress table at
// commit: consumer's watermarks.
type pendingProgress struct {
	consumer string
	ps       []stores.Progress
}

// holdProgress keeps ps of consumer for tx's commit (nothing when ps is
// empty). The upsert waits for the commit so that the row lock it takes
// is held only from there to COMMIT: taken at BEGIN, it would serialise
// the whole transactions of one partition (the key-parallel modes run
// several at once).
func (s *Store) holdProgress(tx *sql.Tx, consumer string, ps []stores.Progress) {
	if len(ps) > 0 {
		s.progress.Store(tx, pendingProgress{consumer, ps})
	}
}

// writeProgress upserts what holdProgress kept for tx, in tx, in one
// statement, and forgets it; a stored watermark never moves back.
func (s *Store) writeProgress(ctx context.Context, tx *sql.Tx) error {
	v, ok := s.progress.LoadAndDelete(tx)
	if !ok {
		return nil
	}
	p := v.(pendingProgress)
	now := time.Now().UnixMicro()
	args := make([]any, 0, 5*len(p.ps))
	for _, w := range p.ps {
		args = append(args, p.consumer, w.Topic, w.Partition, w.Watermark, now)
	}
	q := `INSERT INTO ` + s.names.Progress + ` (consumer, topic, "partition", watermark, updated_at) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", len(p.ps)), ", ") +
		` ON DUPLICATE KEY UPDATE watermark = GREATEST(watermark, VALUES(watermark)), updated_at = VALUES(updated_at)`
	_, err := tx.ExecContext(ctx, q, args...)
	return interpretError("write progress row", err)
}
