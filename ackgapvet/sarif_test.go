package ackgapvet

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type sarifOut struct {
	Runs []struct {
		Tool struct {
			Driver struct {
				Version string `json:"version"`
				Rules   []struct {
					ID      string `json:"id"`
					HelpURI string `json:"helpUri"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		OriginalURIBaseIDs map[string]struct {
			URI string `json:"uri"`
		} `json:"originalUriBaseIds"`
		Results []struct {
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI       string `json:"uri"`
						URIBaseID string `json:"uriBaseId"`
					} `json:"artifactLocation"`
				} `json:"physicalLocation"`
			} `json:"locations"`
			PartialFingerprints map[string]string `json:"partialFingerprints"`
		} `json:"results"`
	} `json:"runs"`
}

func writeSARIF(t *testing.T, rep *Report) sarifOut {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteSARIF(&b, rep))
	var out sarifOut
	require.NoError(t, json.Unmarshal(b.Bytes(), &out), b.String())
	require.Len(t, out.Runs, 1)
	return out
}

// TestSARIFLocationsAndFingerprints: URIs are relative to the root under
// %SRCROOT% (a file outside it gets no location, never an absolute URI), and
// a finding's fingerprint survives lines added above it.
func TestSARIFLocationsAndFingerprints(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "svc", "handler.go")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	src := "package svc\n\nfunc Handle() {\n\tcharge()\n\tcharge()\n}\n"
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	outside := filepath.Join(t.TempDir(), "other.go")
	require.NoError(t, os.WriteFile(outside, []byte(src), 0o644))

	rep := func(line int) *Report {
		return &Report{Root: root, Findings: []Finding{
			{Check: "effect", Severity: SeverityCritical, File: "x", Line: line, Column: 2, Function: "Handle", abs: file},
			{Check: "effect", Severity: SeverityCritical, File: "x", Line: line + 1, Column: 2, Function: "Handle", abs: file},
			{Check: "effect", Severity: SeverityCritical, File: "y", Line: 4, Column: 2, Function: "Handle", abs: outside},
		}}
	}
	before := writeSARIF(t, rep(4)).Runs[0]
	require.NotEmpty(t, before.Tool.Driver.Version)
	require.Equal(t, "file://"+filepath.ToSlash(root)+"/", before.OriginalURIBaseIDs[SRCROOT].URI)
	require.Len(t, before.Results, 3)
	loc := before.Results[0].Locations[0].PhysicalLocation.ArtifactLocation
	require.Equal(t, "svc/handler.go", loc.URI)
	require.Equal(t, SRCROOT, loc.URIBaseID)
	require.Empty(t, before.Results[2].Locations, "outside the root: no absolute URI")
	fp0, fp1 := before.Results[0].PartialFingerprints["ackgapvet/v1"], before.Results[1].PartialFingerprints["ackgapvet/v1"]
	require.NotEmpty(t, fp0)
	require.NotEqual(t, fp0, fp1, "two equal lines in one function get distinct fingerprints")

	// An unrelated edit: three lines added above the function.
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(src, "package svc\n", "package svc\n\n// A comment\nvar x = 1\n", 1)), 0o644))
	after := writeSARIF(t, rep(7)).Runs[0]
	require.Equal(t, fp0, after.Results[0].PartialFingerprints["ackgapvet/v1"])
	require.Equal(t, fp1, after.Results[1].PartialFingerprints["ackgapvet/v1"])
}

// TestHelpURIsResolve: every rule's helpUri is a section of
// docs/ackgapvet.md with the check's name as its heading.
func TestHelpURIsResolve(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "ackgapvet.md"))
	require.NoError(t, err)
	headings := map[string]bool{}
	for _, l := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			headings[strings.TrimSpace(h)] = true
		}
	}
	rules := writeSARIF(t, &Report{}).Runs[0].Tool.Driver.Rules
	require.Len(t, rules, len(Analyzers()))
	for _, r := range rules {
		anchor, ok := strings.CutPrefix(r.HelpURI, DocsURL+"#")
		require.True(t, ok, r.HelpURI)
		require.Equal(t, r.ID, anchor)
		require.True(t, headings[anchor], "docs/ackgapvet.md has no section %q", anchor)
	}
}
