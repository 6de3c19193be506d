package pgxstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/ackgap/ackgap/stores"
)

// Progress returns the progress rows (migration 005) of consumer ("" = every consumer),
// ordered by consumer, topic and partition. It returns an error wrapping
// ackgap.ErrStoreUnavailable when the database cannot be reached.
func (s *Store) Progress(ctx context.Context, consumer string) ([]stores.ProgressRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT consumer, topic, partition, watermark, updated_at FROM `+s.names.Progress+`
WHERE $1 = '' OR consumer = $1 ORDER BY consumer, topic, partition`, consumer)
	if err != nil {
		return nil, interpretError("read progress rows", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stores.ProgressRow, error) {
		var p stores.ProgressRow
		err := r.Scan(&p.Consumer, &p.Topic, &p.Partition, &p.Watermark, &p.UpdatedAt)
		return p, err
	})
	if err != nil {
		return nil, interpretError("read progress rows", err)
	}
	return out, nil
}

// ProgressReader returns the stored watermark of consumer's partition, for
// kafkabroker.SubscriberConfig.Progress: ok false when no row is stored.
func (s *Store) ProgressReader(consumer string) func(ctx context.Context, topic string, partition int32) (int64, bool, error) {
	return func(ctx context.Context, topic string, partition int32) (int64, bool, error) {
		var w int64
		err := s.pool.QueryRow(ctx, `SELECT watermark FROM `+s.names.Progress+` WHERE consumer = $1 AND topic = $2 AND partition = $3`,
			consumer, topic, partition).Scan(&w)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, interpretError("read progress row", err)
		}
		return w, true, nil
	}
}
