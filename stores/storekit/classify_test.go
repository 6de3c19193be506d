package storekit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores/storekit"
)

// TestClassifyMisconfigured: a database not set up for the code is
// unavailable and misconfigured at once (redelivered, never
// dead-lettered), keeps the driver's error, and says "ackgap:" once (a
// new user met "ackgap: store unavailable: ackgap: database not set up"
// on a MariaDB access-denied error).
func TestClassifyMisconfigured(t *testing.T) {
	driver := errors.New("Error 1045 (28000): Access denied for user 'app'@'localhost'")
	err := storekit.ClassifyError("mysqlstore", storekit.Classes{Misconfigured: func(error) bool { return true }}, driver)
	require.ErrorIs(t, err, ackgap.ErrStoreUnavailable)
	require.ErrorIs(t, err, ackgap.ErrStoreMisconfigured)
	require.ErrorIs(t, err, driver)
	require.False(t, ackgap.IsPermanent(err))
	require.Equal(t, 1, strings.Count(err.Error(), "ackgap:"), err.Error())
	require.True(t, strings.HasPrefix(err.Error(), "mysqlstore: ackgap: database not set up for this code"), err.Error())
	require.True(t, strings.HasSuffix(err.Error(), driver.Error()), err.Error())
	require.Same(t, err, storekit.ClassifyError("mysqlstore", storekit.Classes{}, err), "classified once")
}
