package mysqlstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
)

// TestMigrateDownUpAndRerun: all the way down and up again; a step whose
// DDL ran but whose version row was never written (a migrator killed in
// between: DDL commits on its own) runs again without error; concurrent
// migrators under GET_LOCK apply each step once.
func TestMigrateDownUpAndRerun(t *testing.T) {
	store := setup(t)
	ctx := context.Background()
	res, err := store.Migrate(ctx, &stores.MigrateParams{Down: true})
	require.NoError(t, err)
	require.Equal(t, 0, res.Version)
	res, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3, 4}, res.Applied)

	// Forget versions 2 to 4 while their columns, indexes and tables stay.
	_, err = store.DB().ExecContext(ctx, `DELETE FROM ackgap_migration WHERE version >= 2`)
	require.NoError(t, err)
	res, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	require.Equal(t, []int{2, 3, 4}, res.Applied)

	_, err = store.Migrate(ctx, &stores.MigrateParams{Down: true})
	require.NoError(t, err)
	var wg sync.WaitGroup
	applied := make([][]int, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Go(func() {
			r, err := store.Migrate(ctx, &stores.MigrateParams{})
			errs[i] = err
			if r != nil {
				applied[i] = r.Applied
			}
		})
	}
	wg.Wait()
	var all []int
	for i := range 4 {
		require.NoError(t, errs[i])
		all = append(all, applied[i]...)
	}
	require.ElementsMatch(t, []int{1, 2, 3, 4}, all, "each step applied once")
	st, err := store.MigrationStatus(ctx, nil)
	require.NoError(t, err)
	ms, err := mysqlstore.Migrations(nil)
	require.NoError(t, err)
	require.Equal(t, len(ms), st.Version)
}
