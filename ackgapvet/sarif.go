package ackgapvet

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"go/ast"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// SRCROOT is the uriBaseId of every SARIF artifact location: URIs are
// relative to the report's Root (the repository's top level), so a code
// scanning upload from any subfolder lands alerts on the right files.
const SRCROOT = "%SRCROOT%"

// DocsURL is where each check's section lives: helpUri is DocsURL + "#" +
// the check's name (docs/ackgapvet.md in the repository).
const DocsURL = "https://github.com/ackgap/ackgap/blob/main/docs/ackgapvet.md"

// Version is the ackgapvet version SARIF reports as driver.version: the
// version of module github.com/ackgap/ackgap in the running binary's build
// info ("(devel)" for a build from a checkout, or from a module that
// replaces ackgap with a directory).
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	if bi.Main.Path == "github.com/ackgap/ackgap" && bi.Main.Version != "" {
		return knownVersion(bi.Main.Version)
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/ackgap/ackgap" {
			if d.Replace != nil {
				if d.Replace.Version != "" {
					return d.Replace.Version
				}
				return "(devel)" // replaced by a directory: its version is a placeholder
			}
			return knownVersion(d.Version)
		}
	}
	return "(devel)"
}

// knownVersion returns v, or "(devel)" for the zero pseudo-version
// (v0.0.0-00010101000000-000000000000) that a require line stands in with
// when a replace directive points ackgap at a directory and the binary is
// built as a tool of that module.
func knownVersion(v string) string {
	if strings.HasPrefix(v, "v0.0.0-00010101000000-") {
		return "(devel)"
	}
	return v
}

// WriteSARIF writes the report as a SARIF 2.1.0 log with one run, a rule per
// check (its Doc as description, helpUri its section of docs/ackgapvet.md)
// and a result per finding, for code-scanning UIs, and one invocation whose
// executionSuccessful is false, with an error notification each, when a
// package was skipped or a declared entry point named nothing. Artifact URIs are
// relative to rep.Root under uriBaseId %SRCROOT%, never absolute; a finding
// in a file outside Root (which only happens when packages outside the
// repository are checked) has no location but keeps its message. Each result
// carries partialFingerprints["ackgapvet/v1"]: a hash of the check, the
// root-relative file, the enclosing function and the finding's source line
// with spaces removed, plus an occurrence count among equal hashes, so it
// stays the same when unrelated lines are added or removed.
func WriteSARIF(w io.Writer, rep *Report) error {
	type text struct {
		Text string `json:"text"`
	}
	type rule struct {
		ID               string `json:"id"`
		ShortDescription text   `json:"shortDescription"`
		FullDescription  text   `json:"fullDescription"`
		HelpURI          string `json:"helpUri,omitempty"`
	}
	type region struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn"`
		EndLine     int `json:"endLine,omitempty"`
		EndColumn   int `json:"endColumn,omitempty"`
	}
	type artifact struct {
		URI       string `json:"uri"`
		URIBaseID string `json:"uriBaseId"`
	}
	type physical struct {
		ArtifactLocation artifact `json:"artifactLocation"`
		Region           region   `json:"region"`
	}
	type location struct {
		ID               *int     `json:"id,omitempty"`
		PhysicalLocation physical `json:"physicalLocation"`
		Message          *text    `json:"message,omitempty"`
	}
	type result struct {
		RuleID              string            `json:"ruleId"`
		Level               string            `json:"level"`
		Message             text              `json:"message"`
		Locations           []location        `json:"locations,omitempty"`
		RelatedLocations    []location        `json:"relatedLocations,omitempty"`
		PartialFingerprints map[string]string `json:"partialFingerprints"`
		Properties          map[string]string `json:"properties"`
	}
	var rules []rule
	for _, a := range Analyzers() {
		short, _, _ := strings.Cut(a.Doc, "\n")
		rules = append(rules, rule{ID: a.Name, ShortDescription: text{short}, FullDescription: text{a.Doc}, HelpURI: a.URL})
	}
	root := rep.Root
	if root == "" {
		root, _ = os.Getwd()
	}
	lines := map[string][]string{}
	seen := map[string]int{}
	results := []result{}
	for _, f := range rep.Findings {
		abs := cmp.Or(f.abs, absPath(f.File))
		uri, inRoot := underRoot(root, abs)
		res := result{
			RuleID: f.Check, Level: SARIFLevel(f.Severity), Message: text{f.Message},
			Properties: map[string]string{"severity": string(f.Severity)},
		}
		if inRoot {
			res.Locations = []location{{PhysicalLocation: physical{artifact{uri, SRCROOT}, region{f.Line, f.Column, f.EndLine, f.EndColumn}}}}
		}
		for _, r := range f.Related {
			rel, ok := underRoot(root, cmp.Or(r.abs, absPath(r.File)))
			if !ok {
				continue
			}
			id := len(res.RelatedLocations)
			res.RelatedLocations = append(res.RelatedLocations, location{ID: &id,
				PhysicalLocation: physical{artifact{rel, SRCROOT}, region{r.Line, max(r.Column, 1), 0, 0}},
				Message:          &text{"[" + r.Check + "] " + r.Message}})
		}
		src, ok := lines[abs]
		if !ok {
			b, _ := os.ReadFile(abs)
			src = strings.Split(string(b), "\n")
			lines[abs] = src
		}
		var line string
		if f.Line >= 1 && f.Line <= len(src) {
			line = strings.Join(strings.Fields(src[f.Line-1]), "")
		}
		sum := sha256.Sum256([]byte(f.Check + "\x00" + uri + "\x00" + f.Function + "\x00" + line))
		key := hex.EncodeToString(sum[:16])
		seen[key]++
		res.PartialFingerprints = map[string]string{"ackgapvet/v1": key + ":" + strconv.Itoa(seen[key])}
		results = append(results, res)
	}
	// What was not checked is said in the run's invocation, so that a
	// code-scanning upload of a partial run does not read as a clean scan.
	type notification struct {
		Level   string `json:"level"`
		Message text   `json:"message"`
	}
	notes := []notification{}
	for _, sk := range rep.Skipped {
		notes = append(notes, notification{"error", text{"skipped (does not load or type-check): " + sk}})
	}
	for _, e := range rep.UnknownEntries {
		notes = append(notes, notification{"error", text{"declared entry point " + e + " names no function or method of the loaded packages: it declares nothing"}})
	}
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name":           "ackgapvet",
				"version":        Version(),
				"informationUri": DocsURL,
				"rules":          rules,
			}},
			"originalUriBaseIds": map[string]any{
				SRCROOT: map[string]any{"uri": fileURI(root)},
			},
			"results": results,
			"invocations": []any{map[string]any{
				"executionSuccessful":        len(notes) == 0,
				"toolExecutionNotifications": notes,
			}},
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

// underRoot returns abs relative to root in slash form, and whether abs lies
// below root.
func underRoot(root, abs string) (string, bool) {
	r, err := filepath.Rel(root, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// fileURI is dir as a file:// URI ending in a slash, as SARIF's
// originalUriBaseIds requires.
func fileURI(dir string) string {
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return "file://" + p
}

// sourceRoot is the directory SARIF URIs are relative to: the top level of
// the git work tree holding dir, else the directory of the first loaded
// package's module, else dir (the working directory when empty), made
// absolute.
func sourceRoot(dir string, pkgs []*packages.Package) string {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	dir, _ = filepath.Abs(dir)
	cmd := exec.Command("git", "rev-parse", "--show-toplevel")
	cmd.Dir = dir
	if out, err := cmd.Output(); err == nil {
		if top := string(bytes.TrimSpace(out)); top != "" {
			return filepath.Clean(top)
		}
	}
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Dir != "" {
			return p.Module.Dir
		}
	}
	return dir
}

// enclosingFunc names the function declaration around pos in files: "Name"
// or "Recv.Name"; "" when pos is outside every function.
func enclosingFunc(files []*ast.File, pos token.Pos) string {
	for _, f := range files {
		if pos < f.FileStart || pos > f.FileEnd {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || pos < fd.Pos() || pos > fd.End() {
				continue
			}
			if fd.Recv == nil || len(fd.Recv.List) == 0 {
				return fd.Name.Name
			}
			t := fd.Recv.List[0].Type
			for {
				switch x := t.(type) {
				case *ast.StarExpr:
					t = x.X
					continue
				case *ast.IndexExpr:
					t = x.X
					continue
				case *ast.IndexListExpr:
					t = x.X
					continue
				}
				break
			}
			if id, ok := t.(*ast.Ident); ok {
				return id.Name + "." + fd.Name.Name
			}
			return fd.Name.Name
		}
	}
	return ""
}

// absPath is file made absolute against the working directory, where a
// finding's relative path is rooted.
func absPath(file string) string {
	if filepath.IsAbs(file) {
		return file
	}
	wd, _ := os.Getwd()
	return filepath.Join(wd, file)
}
