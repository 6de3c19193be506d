package sqlitestore_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/ackgap/ackgap/stores/storetest"
)

func TestOutboxConformance(t *testing.T) {
	storetest.RunOutbox(t, func(t *testing.T) *storetest.Harness[*sql.Tx] {
		store := setup(t)
		return &storetest.Harness[*sql.Tx]{
			Store: store,
			Exec: func(ctx context.Context, q string) error {
				_, err := store.DB().ExecContext(ctx, q)
				return err
			},
			QueryRow: func(ctx context.Context, q string, dest ...any) error {
				return store.DB().QueryRowContext(ctx, q).Scan(dest...)
			},
		}
	})
}
