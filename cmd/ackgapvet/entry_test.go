package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/ackgapvet"
)

// entryCmd runs a command in testdata/entrymod, a module whose
// .ackgapvet.json declares an entry point and effect overrides.
func entryCmd(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = filepath.Join("testdata", "entrymod")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "ACKGAPVET_FORMAT=", "ACKGAPVET_SEVERITY=", "ACKGAPVET_CHECKS=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return o.String(), e.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return o.String(), e.String(), 0
}

func TestEntriesAndEffectConfig(t *testing.T) {
	bin := build(t)

	t.Run("config file and -entry", func(t *testing.T) {
		out, errOut, code := entryCmd(t, bin, "-format", "json", "-checks", "effect",
			"-entry", "example.com/entrymod/worker.Sweep", "./...")
		require.Equal(t, exitFindings, code, errOut)
		var rep ackgapvet.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		var got []string
		for _, f := range rep.Findings {
			msg, _, _ := strings.Cut(f.Message, " repeats on every redelivery")
			got = append(got, string(f.Severity)+" "+f.Function+": "+msg)
		}
		require.ElementsMatch(t, []string{
			// effects: ledger is a payment SDK; Balance is a read and
			// certcheck is a not_effect, so neither is reported.
			"critical Worker.Drain: a payment call (ledger.Client.Book) on the consumer path of declared entry point Worker.Drain",
			"medium Sweep: an HTTP request (http.Client.Post) on the consumer path of declared entry point Sweep",
		}, got)
	})

	t.Run("go vet reads the config file", func(t *testing.T) {
		abs, err := filepath.Abs(bin)
		require.NoError(t, err)
		_, errOut, code := entryCmd(t, "go", "vet", "-vettool="+abs, "./...")
		require.NotEqual(t, 0, code)
		require.Contains(t, errOut, "a payment call (ledger.Client.Book) on the consumer path of declared entry point Worker.Drain")
		require.NotContains(t, errOut, "Sweep", "-entry was not given")
		require.NotContains(t, errOut, "certcheck")
	})

	t.Run("bad entry", func(t *testing.T) {
		_, errOut, code := entryCmd(t, bin, "-entry", "worker", "./...")
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, `entries: "worker": want pkgpath.Func or pkgpath.Type.Method`)
	})

	t.Run("declared entry reached by another", func(t *testing.T) {
		out, errOut, code := entryCmd(t, bin, "map", "-entry", "example.com/entrymod/worker.Sweep", "-entry", "example.com/entrymod/worker.Flush", "./...")
		require.Equal(t, exitClean, code, errOut)
		require.Contains(t, out, "declared entry point Sweep")
		require.Contains(t, out, "declared entry point Flush", "asked for, it is listed though Sweep reaches it")
	})

	t.Run("entry that names nothing", func(t *testing.T) {
		// A typo in a well-formed name declares nothing: said, and the
		// run fails, with the map of what it did find still written.
		out, errOut, code := entryCmd(t, bin, "map", "-entry", "example.com/entrymod/worker.Swep", "./...")
		require.Equal(t, exitError, code, errOut)
		require.Contains(t, errOut, "declared entry point example.com/entrymod/worker.Swep names no function or method of the loaded packages")
		require.NotContains(t, errOut, "worker.Sweep names", "the right name is known")
		require.Contains(t, out, "Worker.Drain", "the config file's entry still maps")
	})
}
