package ackgap_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeMarker is the HTML comment (invisible on GitHub) on the line before
// a README Go snippet: "compiled in FILE" names the _test.go file that holds
// the same lines, compiled; "not compiled: REASON" says why a snippet has no
// such file (a fragment whose compiled form lives elsewhere).
var readmeMarker = regexp.MustCompile(`^<!-- (compiled in (\S+)|not compiled: .+) -->$`)

// readmeSnippet is one ```go block of README.md.
type readmeSnippet struct {
	line  int    // 1-based line of the opening fence
	file  string // "compiled in" file, empty for "not compiled"
	lines []string
}

// readREADMESnippets returns README.md's Go snippets with their markers,
// failing t on a snippet without one.
func readREADMESnippets(t *testing.T) []readmeSnippet {
	t.Helper()
	f, err := os.Open("README.md")
	require.NoError(t, err)
	defer f.Close()
	var (
		out  []readmeSnippet
		cur  *readmeSnippet
		prev string
		n    int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		case line == "```go":
			m := readmeMarker.FindStringSubmatch(prev)
			if m == nil {
				t.Errorf("README.md:%d: a Go snippet without <!-- compiled in FILE --> or <!-- not compiled: REASON --> on the line before", n)
				m = []string{"", "", ""}
			}
			cur = &readmeSnippet{line: n, file: m[2]}
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "README.md: an unclosed ```go block")
	return out
}

// codeLines returns lines without their indentation and without blank lines.
func codeLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// splitImports returns the paths of a leading import block and the lines
// after it.
func splitImports(lines []string) (imports, rest []string) {
	if len(lines) == 0 || lines[0] != "import (" {
		return nil, lines
	}
	for i, l := range lines[1:] {
		if l == ")" {
			return imports, lines[i+2:]
		}
		imports = append(imports, l)
	}
	return imports, nil
}

// TestREADMESnippetsMirrored checks that every Go snippet of the README is
// compiled: its lines (indentation and blank lines aside) appear together,
// in order, in the _test.go file its marker names, and the imports it lists
// are among that file's. Change a snippet and its mirror together.
func TestREADMESnippetsMirrored(t *testing.T) {
	t.Parallel()
	snippets := readREADMESnippets(t)
	require.NotEmpty(t, snippets)
	for _, s := range snippets {
		if s.file == "" {
			continue
		}
		require.Truef(t, strings.HasSuffix(s.file, "_test.go"), "README.md:%d: %s is not a test file", s.line, s.file)
		raw, err := os.ReadFile(s.file)
		require.NoErrorf(t, err, "README.md:%d", s.line)
		fileImports := importLines(string(raw))
		imports, code := splitImports(codeLines(s.lines))
		for _, imp := range imports {
			require.Containsf(t, fileImports, imp, "README.md:%d: import %s is not in %s", s.line, imp, s.file)
		}
		require.NotEmptyf(t, code, "README.md:%d: an empty snippet", s.line)
		require.Truef(t, containsRun(codeLines(strings.Split(string(raw), "\n")), code),
			"README.md:%d: the snippet is not in %s line for line (first line %q); change both together", s.line, s.file, code[0])
	}
}

// importLines returns the lines of the first import block of src.
func importLines(src string) []string {
	i := strings.Index(src, "\nimport (\n")
	if i < 0 {
		return nil
	}
	imports, _ := splitImports(codeLines(strings.Split(src[i+1:], "\n")))
	return imports
}

// containsRun reports whether run appears in lines, contiguous and in order.
func containsRun(lines, run []string) bool {
	for i := range lines {
		if i+len(run) > len(lines) {
			return false
		}
		if slices.Equal(lines[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// TestREADMESnippetsBuildInUserModule builds the README's complete snippets
// (those that open with their import block) the way a user pastes them: in
// a fresh module of its own, with this checkout replacing ackgap, one
// package per snippet. A top-level snippet right after a complete one
// ("func ..." or its doc comment) joins its package. The mirror files
// compile the same lines inside ackgap's tests; this catches an import the
// README's block lacks. It needs ackgap's dependencies in the module cache
// or from GOPROXY; -short skips it.
func TestREADMESnippetsBuildInUserModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the README's snippets in a fresh module")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	require.NoError(t, err)
	checkout := strings.TrimSpace(string(out))

	dir := t.TempDir()
	gomod := "module example.com/readme\n\ngo 1.26\n\n" +
		"require github.com/ackgap/ackgap v0.0.0\n\n" +
		"replace github.com/ackgap/ackgap => " + checkout + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))

	var (
		pkgs    []string
		current string // the package the previous snippet went to, if any
	)
	for _, s := range readREADMESnippets(t) {
		code := codeLines(s.lines)
		switch {
		case len(code) > 0 && code[0] == "import (":
			current = fmt.Sprintf("snippet%d", s.line)
			pkgs = append(pkgs, current)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, current), 0o755))
			src := "package " + current + "\n\n" + strings.Join(s.lines, "\n") + "\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, current, "a.go"), []byte(src), 0o644))
		case current != "" && len(code) > 0 && (strings.HasPrefix(code[0], "func ") || strings.HasPrefix(code[0], "//")) &&
			!strings.HasPrefix(code[0], "func Test"):
			// The same file: it shares the complete snippet's imports.
			f, err := os.OpenFile(filepath.Join(dir, current, "a.go"), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString("\n" + strings.Join(s.lines, "\n") + "\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		default:
			current = ""
		}
	}
	require.GreaterOrEqual(t, len(pkgs), 4, "the handler, existing-router, Kafka and SQS snippets open with their imports")

	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir, tidy.Env = dir, env
	b, err := tidy.CombinedOutput()
	require.NoError(t, err, "%s", b)
	build := exec.Command("go", "build", "./...")
	build.Dir, build.Env = dir, env
	b, err = build.CombinedOutput()
	require.NoError(t, err, "the README's snippets, pasted into a module of their own (README.md line = package name):\n%s", b)
}
