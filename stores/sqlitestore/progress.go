package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/ackgap/ackgap/stores"
)

// Progress returns the progress rows (migration 004) of consumer ("" = every consumer),
// ordered by consumer, topic and partition.
func (s *Store) Progress(ctx context.Context, consumer string) ([]stores.ProgressRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT consumer, topic, partition, watermark, updated_at FROM `+s.names.Progress+`
WHERE ?1 = '' OR consumer = ?1 ORDER BY consumer, topic, partition`, consumer)
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
		err := s.db.QueryRowContext(ctx, `SELECT watermark FROM `+s.names.Progress+` WHERE consumer = ?1 AND topic = ?2 AND partition = ?3`,
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
