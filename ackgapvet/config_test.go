package ackgapvet_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/ackgapvet"
)

func TestLoadConfig(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "cmd", "worker")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644))

	cfg, path, err := ackgapvet.LoadConfig(sub)
	require.NoError(t, err)
	require.Nil(t, cfg, "no file: no configuration")
	require.Empty(t, path)

	file := filepath.Join(root, ackgapvet.ConfigFile)
	require.NoError(t, os.WriteFile(file, []byte(`{
		"entries": ["example.com/m/worker.Run", "example.com/m/worker.Consumer.Loop"],
		"effects": {"github.com/stripe/stripe-go": "payment"},
		"not_effects": ["github.com/foo/certcheck"]
	}`), 0o644))
	cfg, path, err = ackgapvet.LoadConfig(sub)
	require.NoError(t, err)
	require.Equal(t, file, path, "found at the module root above the directory")
	require.Equal(t, &ackgapvet.Config{
		Entries:    []string{"example.com/m/worker.Run", "example.com/m/worker.Consumer.Loop"},
		Effects:    map[string]string{"github.com/stripe/stripe-go": "payment"},
		NotEffects: []string{"github.com/foo/certcheck"},
	}, cfg)

	require.NoError(t, os.WriteFile(file, []byte(`{"entries": ["worker"], "effects": {"x.com/y": "money", "": "email"}}`), 0o644))
	_, _, err = ackgapvet.LoadConfig(sub)
	require.ErrorContains(t, err, file+": invalid config:")
	require.ErrorContains(t, err, `entries: "worker": want pkgpath.Func or pkgpath.Type.Method`)
	require.ErrorContains(t, err, `effects: "x.com/y": class "money"`)
	require.ErrorContains(t, err, "effects: empty package path prefix")

	require.NoError(t, os.WriteFile(file, []byte(`{"entrypoints": []}`), 0o644))
	_, _, err = ackgapvet.LoadConfig(sub)
	require.ErrorContains(t, err, `unknown field "entrypoints"`)
}

func TestSetConfigRefusesBadInput(t *testing.T) {
	t.Cleanup(func() { require.NoError(t, ackgapvet.SetConfig(nil)) })
	require.NoError(t, ackgapvet.SetConfig(&ackgapvet.Config{Entries: []string{"entries.Worker.Loop"}}))
	require.ErrorContains(t, ackgapvet.SetConfig(&ackgapvet.Config{Entries: []string{"entries.Worker.Loop."}}), "want pkgpath.Func")
}

// TestSelectAllAmongOthers: "all" named beside other checks selects every
// check, as "all" alone does, rather than failing as an unknown name.
func TestSelectAllAmongOthers(t *testing.T) {
	got, err := ackgapvet.Select([]string{"all", "effect"})
	require.NoError(t, err)
	require.Len(t, got, len(ackgapvet.Analyzers()))
	_, err = ackgapvet.Select([]string{"effect", "nosuch"})
	require.ErrorContains(t, err, `unknown check "nosuch"`)
}
