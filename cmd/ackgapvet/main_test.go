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

// build compiles the command once per test binary.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ackgapvet")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// shopEnv runs commands in testdata/shop, offline: its one dependency is a
// local stub (replace directive).
func shopCmd(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = filepath.Join("testdata", "shop")
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

// chargeMsg is the per-package mode's finding: at the call into package
// pay, judged by pay.Charge's fact.
const chargeMsg = "the call of pay.Charge, which makes an HTTP request (http.Client.Post), on the consumer path of watermill handler (func literal) repeats on every redelivery"

// chargePath is the whole-program mode's finding: inside pay.Charge, where
// the request is made, with the path from the handler.
const chargePath = "an HTTP request (http.Client.Post) on the consumer path of watermill handler shop.Register.func1 (shop.Register.func1 → pay.Charge) repeats on every redelivery"

func TestCommand(t *testing.T) {
	bin := build(t)

	t.Run("text", func(t *testing.T) {
		out, errOut, code := shopCmd(t, bin, ".")
		require.Equal(t, exitFindings, code, errOut)
		require.Equal(t, "pay/pay.go:17:11: critical: "+chargePath+"; give it an idempotency key derived from the message's event id (the receiver then applies it once), or record it in an outbox row in the transaction of the message's state change and make it from there [effect]\n", out)
	})

	t.Run("per-package", func(t *testing.T) {
		out, errOut, code := shopCmd(t, bin, "-per-package", ".")
		require.Equal(t, exitFindings, code, errOut)
		require.Equal(t, "shop.go:15:10: critical: "+chargeMsg+"; give it an idempotency key derived from the message's event id (the receiver then applies it once), or record it in an outbox row in the transaction of the message's state change and make it from there [effect]\n", out)
	})

	t.Run("json", func(t *testing.T) {
		out, errOut, code := shopCmd(t, bin, "-format", "json", ".")
		require.Equal(t, exitFindings, code, errOut)
		var rep ackgapvet.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		require.Len(t, rep.Findings, 1, "the ignored cache warm-up is suppressed")
		f := rep.Findings[0]
		require.Equal(t, "effect", f.Check)
		require.Equal(t, ackgapvet.SeverityCritical, f.Severity)
		require.Equal(t, "pay/pay.go", f.File)
		require.Equal(t, 17, f.Line)
		require.Contains(t, f.Message, chargePath)
		require.Len(t, rep.Consumers, 2, "the consumer map: the charge handler and the cache warm-up")
	})

	t.Run("sarif", func(t *testing.T) {
		out, errOut, code := shopCmd(t, bin, "-format", "sarif", ".")
		require.Equal(t, exitFindings, code, errOut)
		var log struct {
			Version string `json:"version"`
			Runs    []struct {
				Tool struct {
					Driver struct {
						Name    string `json:"name"`
						Version string `json:"version"`
						Rules   []struct {
							ID string `json:"id"`
						} `json:"rules"`
					} `json:"driver"`
				} `json:"tool"`
				OriginalURIBaseIDs map[string]struct {
					URI string `json:"uri"`
				} `json:"originalUriBaseIds"`
				Results []struct {
					RuleID    string `json:"ruleId"`
					Level     string `json:"level"`
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct {
								URI       string `json:"uri"`
								URIBaseID string `json:"uriBaseId"`
							} `json:"artifactLocation"`
							Region struct {
								StartLine int `json:"startLine"`
							} `json:"region"`
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"results"`
			} `json:"runs"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &log), out)
		require.Equal(t, "2.1.0", log.Version)
		require.Len(t, log.Runs, 1)
		require.Equal(t, "ackgapvet", log.Runs[0].Tool.Driver.Name)
		require.Len(t, log.Runs[0].Tool.Driver.Rules, len(ackgapvet.Analyzers()))
		require.Len(t, log.Runs[0].Results, 1)
		res := log.Runs[0].Results[0]
		require.Equal(t, "effect", res.RuleID)
		require.Equal(t, "error", res.Level)
		require.NotEmpty(t, log.Runs[0].Tool.Driver.Version)
		// The URI is relative to the repository root (this checkout's git
		// top level, or the shop module's directory outside git), never
		// absolute, and resolves to the file through %SRCROOT%.
		art := res.Locations[0].PhysicalLocation.ArtifactLocation
		require.Equal(t, ackgapvet.SRCROOT, art.URIBaseID)
		require.False(t, filepath.IsAbs(art.URI), art.URI)
		base, ok := strings.CutPrefix(log.Runs[0].OriginalURIBaseIDs[ackgapvet.SRCROOT].URI, "file://")
		require.True(t, ok)
		want, err := filepath.Abs(filepath.Join("testdata", "shop", "pay", "pay.go"))
		require.NoError(t, err)
		require.Equal(t, want, filepath.FromSlash(base+art.URI))
		require.Equal(t, 17, res.Locations[0].PhysicalLocation.Region.StartLine)
	})

	t.Run("version", func(t *testing.T) {
		out, errOut, code := shopCmd(t, bin, "-version")
		require.Equal(t, exitClean, code, errOut)
		sarif := sarifDriverVersion(t, bin)
		require.Equal(t, "ackgapvet "+sarif+"\n", out, "the version SARIF reports as driver.version")
		out, errOut, code = shopCmd(t, bin, "map", "-version")
		require.Equal(t, exitClean, code, errOut)
		require.Equal(t, "ackgapvet "+sarif+"\n", out)
	})

	t.Run("json suggested fix", func(t *testing.T) {
		out, errOut, code := shopCmd(t, bin, "-format", "json", "-checks", "pooltx", "./ledger")
		require.Equal(t, exitFindings, code, errOut)
		var rep ackgapvet.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		require.Len(t, rep.Findings, 1)
		f := rep.Findings[0]
		require.Equal(t, "pooltx", f.Check)
		require.Equal(t, "ledger/ledger.go", f.File)
		require.Equal(t, 27, f.Line)
		require.Contains(t, f.Message, "writes through db instead of the transaction tx")
		require.NotContains(t, f.Message, "[pooltx]", "the check has a field of its own")
		require.Equal(t, []ackgapvet.Fix{{Message: "use the transaction tx", Edits: []ackgapvet.Edit{{
			File: "ledger/ledger.go", Line: 27, Column: 12, EndLine: 27, EndColumn: 14, NewText: "tx",
		}}}}, f.Fixes)
	})

	t.Run("clean", func(t *testing.T) {
		out, errOut, code := shopCmd(t, bin, "./clean")
		require.Equal(t, exitClean, code, errOut)
		require.Empty(t, out)
	})

	t.Run("severity override", func(t *testing.T) {
		out, errOut, code := shopCmd(t, bin, "-severity", "low=charge;critical=nomatch", "./...")
		require.Equal(t, exitFindings, code, errOut)
		require.Contains(t, out, "pay/pay.go:17:11: low: ")
	})

	t.Run("bad input", func(t *testing.T) {
		_, errOut, code := shopCmd(t, bin, "-format", "xml", "./...")
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, `-format "xml": want text, json, markdown or sarif`)
		_, errOut, code = shopCmd(t, bin, "map", "-format", "sarif", "./...")
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, `-format "sarif": want text, json or markdown`)
		_, errOut, code = shopCmd(t, bin, "-per-package", "-diff", "HEAD", "./...")
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, "-diff needs the whole-program mode")
		_, errOut, code = shopCmd(t, bin, "-checks", "effect,nosuch", "./...")
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, `unknown check "nosuch"`)
		_, errOut, code = shopCmd(t, bin, "-severity", "urgent=x", "./...")
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, "want <critical|high|medium|low>=<regexp>")
		_, errOut, code = shopCmd(t, bin, "./nosuchpkg/...")
		require.Equal(t, exitError, code, "a pattern that loads nothing is not a clean run")
		require.Contains(t, errOut, "skipped (does not load or type-check): ./nosuchpkg/...")
		_, errOut, code = shopCmd(t, bin, "./...", "./nosuchpkg/...")
		require.Equal(t, exitFindings, code, "findings where packages were checked")
		require.Contains(t, errOut, "1 package(s) not checked", "the skipped count is said with findings too")
	})

	t.Run("map", func(t *testing.T) {
		out, errOut, code := shopCmd(t, bin, "map", "./...")
		require.Equal(t, exitClean, code, errOut)
		require.Contains(t, out, "shop.go:14: watermill handler shop.Register.func1")
		require.Contains(t, out, "via shop.Register.func1 → pay.Charge")
		out, errOut, code = shopCmd(t, bin, "map", "-format", "markdown", "./...")
		require.Equal(t, exitClean, code, errOut)
		require.True(t, strings.HasPrefix(out, "| consumer | kind |"), out)
	})

	t.Run("go vet -vettool", func(t *testing.T) {
		abs, err := filepath.Abs(bin)
		require.NoError(t, err)
		_, errOut, code := shopCmd(t, "go", "vet", "-vettool="+abs, "./...")
		require.NotEqual(t, 0, code, errOut)
		require.Contains(t, errOut, "shop.go:15:10: critical: "+chargeMsg)
		require.Regexp(t, `shop\.go:15:10: critical: [^\n]* \[effect\]\n`, errOut,
			"the check's name, for //ackgapvet:ignore, is kept under go vet")
		require.NotContains(t, errOut, "cache.example", "suppressed")

		_, errOut, code = shopCmd(t, "go", "vet", "-vettool="+abs, "./clean")
		require.Equal(t, 0, code, errOut)
	})
}

// sarifDriverVersion returns the tool.driver.version of the binary's SARIF
// report on the clean package.
func sarifDriverVersion(t *testing.T, bin string) string {
	t.Helper()
	out, errOut, code := shopCmd(t, bin, "-format", "sarif", "./clean")
	require.Equal(t, exitClean, code, errOut)
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Version string `json:"version"`
				} `json:"driver"`
			} `json:"tool"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &log), out)
	require.Len(t, log.Runs, 1)
	require.NotEmpty(t, log.Runs[0].Tool.Driver.Version)
	return log.Runs[0].Tool.Driver.Version
}

func TestVersionFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, exitClean, run([]string{"-version"}, &out, &errOut), errOut.String())
	require.Equal(t, "ackgapvet "+ackgapvet.Version()+"\n", out.String())
	require.Empty(t, errOut.String())
}

func TestVetMode(t *testing.T) {
	require.True(t, vetMode([]string{"-V=full"}))
	require.True(t, vetMode([]string{"-flags"}))
	require.True(t, vetMode([]string{"-effect", "/tmp/x/vet.cfg"}))
	require.False(t, vetMode([]string{"./..."}))
	require.False(t, vetMode(nil))
}
