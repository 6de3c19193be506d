package ackgapvet

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xeipuuv/gojsonschema"

	// The OASIS SARIF 2.1.0 JSON schema ships inside go-sarif (the
	// unexported const schema in schema.go); imported so the module is
	// pinned in go.mod and present in the module cache.
	_ "github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
)

// sarifSchema reads the SARIF 2.1.0 schema (errata 01) out of go-sarif's
// source in the module cache.
func sarifSchema(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif").Output()
	require.NoError(t, err)
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(strings.TrimSpace(string(out)), "schema.go"), nil, 0)
	require.NoError(t, err)
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if vs.Names[0].Name == "schema" {
				v, err := strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
				require.NoError(t, err)
				require.Contains(t, v, "sarif-schema-2.1.0.json")
				return v
			}
		}
	}
	t.Fatal("no schema const in go-sarif's schema.go")
	return ""
}

// TestSARIFSchema: the SARIF the checker writes, for a real run with
// findings, fixes and the consumer path, validates against the OASIS SARIF
// 2.1.0 schema; a document that breaks it is rejected (the validator can
// fail).
func TestSARIFSchema(t *testing.T) {
	schema := gojsonschema.NewStringLoader(sarifSchema(t))
	rep, err := Run(&RunConfig{Dir: filepath.Join("testdata", "program"), Env: append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Findings)
	rep.Findings[0].Fixes = []Fix{{Message: "use tx", Edits: []Edit{{File: rep.Findings[0].File, Line: rep.Findings[0].Line, Column: 1, EndLine: rep.Findings[0].Line, EndColumn: 2, NewText: "x"}}}}
	rel := rep.Findings[len(rep.Findings)-1]
	rep.Findings[0].Related = append(rep.Findings[0].Related, Related{Check: rel.Check, File: rel.File, Line: rel.Line, Message: rel.Message, abs: rel.abs})
	var b bytes.Buffer
	require.NoError(t, WriteSARIF(&b, rep))
	require.Contains(t, b.String(), `"relatedLocations"`, "a merged finding's other places are related locations")
	res, err := gojsonschema.Validate(schema, gojsonschema.NewBytesLoader(b.Bytes()))
	require.NoError(t, err)
	require.True(t, res.Valid(), "%v", res.Errors())

	// A partial run says so in its invocation, and still validates.
	rep.Skipped = []string{"example.com/program/broken: undefined: x"}
	rep.UnknownEntries = []string{"example.com/program/poll.Lop"}
	var partial bytes.Buffer
	require.NoError(t, WriteSARIF(&partial, rep))
	res, err = gojsonschema.Validate(schema, gojsonschema.NewBytesLoader(partial.Bytes()))
	require.NoError(t, err)
	require.True(t, res.Valid(), "%v", res.Errors())
	var inv struct {
		Runs []struct {
			Invocations []struct {
				ExecutionSuccessful bool `json:"executionSuccessful"`
				Notes               []struct {
					Level   string `json:"level"`
					Message struct {
						Text string `json:"text"`
					} `json:"message"`
				} `json:"toolExecutionNotifications"`
			} `json:"invocations"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(partial.Bytes(), &inv))
	require.Len(t, inv.Runs[0].Invocations, 1)
	require.False(t, inv.Runs[0].Invocations[0].ExecutionSuccessful)
	require.Len(t, inv.Runs[0].Invocations[0].Notes, 2)
	require.Contains(t, inv.Runs[0].Invocations[0].Notes[0].Message.Text, "example.com/program/broken")
	require.Contains(t, inv.Runs[0].Invocations[0].Notes[1].Message.Text, "poll.Lop")
	require.NoError(t, json.Unmarshal(b.Bytes(), &inv))
	require.True(t, inv.Runs[0].Invocations[0].ExecutionSuccessful, "a full run succeeded")

	broken := bytes.Replace(b.Bytes(), []byte(`"version": "2.1.0"`), []byte(`"version": "2.0"`), 1)
	require.NotEqual(t, b.Bytes(), broken, "the document names its version")
	res, err = gojsonschema.Validate(schema, gojsonschema.NewBytesLoader(broken))
	require.NoError(t, err)
	require.False(t, res.Valid(), "a wrong version must not validate")
}
