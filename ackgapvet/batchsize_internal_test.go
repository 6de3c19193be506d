package ackgapvet

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIaCDirs: a module's infrastructure files are read in its folder and,
// for a module in a subfolder of its repository, in the parent; not above
// a repository's root (a folder holding .git), and not in the temporary
// folder a module was made in, where other folders' Terraform sits (a new
// user's /tmp/app got another folder's event source mapping).
func TestIaCDirs(t *testing.T) {
	repo := t.TempDir()
	module := filepath.Join(repo, "backend")
	require.NoError(t, os.Mkdir(module, 0o755))
	require.Equal(t, []string{module, repo}, iacDirs(module))

	require.NoError(t, os.Mkdir(filepath.Join(module, ".git"), 0o755))
	require.Equal(t, []string{module}, iacDirs(module), "a repository's root")

	direct, err := os.MkdirTemp("", "iacdirs")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(direct) })
	require.Equal(t, []string{direct}, iacDirs(direct), "a module made in the temporary folder")
}
