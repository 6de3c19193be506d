package billingsim

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenMariaDBErrorSaysOpenOnce: a MariaDB server that cannot be reached
// is reported as the store names it ("mysqlstore: open: ..."), not wrapped
// again ("open mariadb: mysqlstore: open: ..."): the demo and a soak child
// read like the PostgreSQL path, which says each step once.
func TestOpenMariaDBErrorSaysOpenOnce(t *testing.T) {
	t.Parallel()
	const dsn = "mysql://root@127.0.0.1:1/test" // nothing listens on port 1
	_, err := openMySQL(context.Background(), dsn, false)
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "mysqlstore: open: "), err.Error())
	require.Equal(t, 1, strings.Count(err.Error(), "open"), err.Error())

	c := &soakChild{Store: SoakStoreMariaDB, DSN: "root@tcp(127.0.0.1:1)/test"}
	err = c.run(context.Background(), io.Discard)
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "mysqlstore: open: "), err.Error())
	require.Equal(t, 1, strings.Count(err.Error(), "open"), err.Error())
}
