package billingsim

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInterruptedKeepSaysWhere: a run interrupted before its summary (the
// summary is what prints the kept file's path) still says where -keep kept
// the data, and the file is there.
func TestInterruptedKeepSaysWhere(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the demo's SQLite dir is made under it
	b, err := openSQLite(context.Background(), true)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // interrupted
	s, err := runAndClose(ctx, b, Options{Events: 100})
	require.Nil(t, s)
	require.Error(t, err)
	m := regexp.MustCompile(`sqlite: (\S+/billing\.db), kept\)`).FindStringSubmatch(err.Error())
	require.NotNil(t, m, err.Error())
	_, serr := os.Stat(m[1])
	require.NoError(t, serr, "the kept file is where the message says")
	require.Equal(t, "billing.db", filepath.Base(m[1]))
}
