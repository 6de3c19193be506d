package ackgapvet

import (
	"cmp"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"
)

// RunConfig configures [Run]. A nil *RunConfig means all defaults.
type RunConfig struct {
	// Dir is the directory patterns are resolved in. Default: the current
	// directory.
	Dir string
	// Patterns are go/packages patterns. Default: "./...".
	Patterns []string
	// Tests also loads and checks the packages' test files. Default: false.
	Tests bool
	// Checks names the checks to run (analyzer names), or "all". Default:
	// [Analyzers] less the [OptIn] checks (see [Select]).
	Checks []string
	// Env is the environment of the go command that loads packages. Default:
	// the process's environment.
	Env []string
	// PerPackage runs only the go/analysis form (what go vet -vettool and
	// golangci-lint run): calls are followed within a package and across
	// packages by facts, not through interfaces, function values,
	// goroutines or channels. Faster, less complete. Default: false, the
	// whole-program mode (SSA and a VTA call graph over the loaded
	// packages and their dependencies), which also fills Report.Consumers.
	PerPackage bool
	// DiffBase, when set, narrows the report to the consumers whose
	// reachable code changed between this git revision (a commit, branch
	// or tag) and the working tree, and to the findings inside their
	// functions: what a pull request does to its consumers. It needs the
	// whole-program mode; Run returns an error with PerPackage set, outside
	// a git work tree, or for a revision git does not know.
	DiffBase string
	// Entries declares more consumer entry points by name, added to the
	// entries of [ConfigFile]: "pkgpath.Func" or "pkgpath.Type.Method".
	// Default: none.
	Entries []string
}

// Finding is one diagnostic, with its position resolved.
type Finding struct {
	// Check is the analyzer name, e.g. "effect".
	Check string `json:"check"`
	// Severity is the blast radius of the finding.
	Severity Severity `json:"severity"`
	// File is the file's path; Line and Column are 1-based, Column in bytes.
	File      string `json:"file"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"end_line,omitempty"`
	EndColumn int    `json:"end_column,omitempty"`
	// Function is the enclosing function's name ("Recv.Method" for a
	// method, "" at package level); SARIF fingerprints use it.
	Function string `json:"function,omitempty"`
	// Message says the risk and the fix, without the severity prefix.
	Message string `json:"message"`
	// Fixes are suggested edits, when one is mechanical.
	Fixes []Fix `json:"fixes,omitempty"`
	// Related are the places a merged finding stands for besides its own
	// (see [Related]); its message names them.
	Related []Related `json:"related,omitempty"`

	abs string // the file's absolute path, for SARIF's root-relative URI
}

// Fix is a suggested fix: a message and its edits.
type Fix struct {
	Message string `json:"message"`
	Edits   []Edit `json:"edits"`
}

// Edit replaces the text between two positions (1-based lines, byte
// columns) with NewText.
type Edit struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"end_line"`
	EndColumn int    `json:"end_column"`
	NewText   string `json:"new_text"`
}

// Report is the outcome of [Run].
type Report struct {
	// Findings, sorted by file, line and column, then check.
	Findings []Finding `json:"findings"`
	// Skipped lists packages that did not load or type-check, with their
	// first error: they were not checked.
	Skipped []string `json:"skipped,omitempty"`
	// Root is the absolute directory SARIF URIs are relative to: the git
	// work tree's top level holding the packages, else the main module's
	// directory, else the working directory.
	Root string `json:"root,omitempty"`
	// Consumers is the consumer map: one entry per entry point, in the
	// order of their files and lines. Filled in the whole-program mode
	// only.
	Consumers []Consumer `json:"consumers,omitempty"`
	// UnknownEntries lists the declared entry points ([RunConfig].Entries,
	// the entries of [ConfigFile]) that name no function or method of the
	// loaded packages: a typo, or a package outside the patterns. They
	// declare nothing.
	UnknownEntries []string `json:"unknown_entries,omitempty"`
}

// Run loads the packages of cfg.Patterns with go/packages (full syntax, so
// facts flow across packages) and runs the checks on them. It returns an
// error for an unknown check name or when loading fails as a whole; packages
// that fail to type-check are listed in Report.Skipped.
func Run(cfg *RunConfig) (*Report, error) {
	if cfg == nil {
		cfg = &RunConfig{}
	}
	if cfg.DiffBase != "" && cfg.PerPackage {
		return nil, errors.New("-diff needs the whole-program mode: drop -per-package")
	}
	analyzers, err := Select(cfg.Checks)
	if err != nil {
		return nil, err
	}
	if _, err := currentRules(); err != nil {
		return nil, err
	}
	if err := applyConfig(cfg); err != nil {
		return nil, err
	}
	patterns := cfg.Patterns
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	// The whole-program mode type-checks the packages it checks from source
	// and their dependencies from export data (go list -export, the build
	// cache): it follows calls through SSA, not facts, and classifies a
	// dependency's functions by package at the call. The per-package mode
	// needs every dependency's syntax for its facts.
	mode := packages.LoadAllSyntax | packages.NeedModule
	if !cfg.PerPackage {
		mode &^= packages.NeedDeps
		if patterns, err = withModulePackages(cfg.Dir, env, cfg.Tests, patterns); err != nil {
			return nil, err
		}
	}
	pkgs, err := packages.Load(&packages.Config{
		Mode:  mode,
		Dir:   cfg.Dir,
		Tests: cfg.Tests,
		Env:   env,
	}, patterns...)
	if err != nil {
		return nil, fmt.Errorf("load packages: %w", err)
	}
	rep := &Report{Root: sourceRoot(cfg.Dir, pkgs)}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if len(p.Errors) > 0 {
			rep.Skipped = append(rep.Skipped, p.PkgPath+": "+p.Errors[0].Error())
		}
	})
	if len(pkgs) == 0 {
		return nil, errors.New("no packages match " + strings.Join(patterns, " "))
	}
	rep.UnknownEntries = unknownEntries(pkgs)
	debugf("loaded %d packages", len(pkgs))
	var w *wholeProgram
	if !cfg.PerPackage {
		w, err = programOf(pkgs)
		if err != nil {
			return nil, err
		}
		defer w.publish()()
		rep.Consumers = w.consumerMap()
	}
	graph, err := checker.Analyze(analyzers, pkgs, nil)
	if err != nil {
		return nil, err
	}
	debugf("checks done")
	seen := map[string]bool{}
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil && !act.Package.IllTyped {
			return nil, fmt.Errorf("%s: %s: %w", act.Package.PkgPath, act.Analyzer.Name, act.Err)
		}
		for _, d := range act.Diagnostics {
			files := act.Package.Syntax
			if inGeneratedFile(files, d.Pos) {
				// Not the code's authors' to change: reported at the
				// call of their own code that reaches it (sqlc's or
				// goctl's INSERT under the consumer's CreateX call), or
				// dropped when no walk reaches it.
				site, siteFiles := w.handWrittenCaller(d.Pos)
				if !site.IsValid() {
					continue
				}
				at := act.Package.Fset.Position(d.Pos)
				tag := checkTag(act.Analyzer.Name)
				d.Message = fmt.Sprintf("%s (in generated code, %s:%d, reached through this call)%s", strings.TrimSuffix(d.Message, tag), relPath(at.Filename), at.Line, tag)
				d.Pos, d.End, d.SuggestedFixes, files = site, token.NoPos, nil, siteFiles
			}
			f := toFinding(act.Package.Fset, act.Analyzer, d)
			f.Function = enclosingFunc(files, d.Pos)
			key := fmt.Sprintf("%s:%d:%d:%s:%s", f.File, f.Line, f.Column, f.Check, f.Message)
			if !seen[key] {
				seen[key] = true
				rep.Findings = append(rep.Findings, f)
			}
		}
	}
	sortFindings(rep.Findings)
	rep.Findings = mergeRepeats(rep.Findings)
	rep.Findings = dropAllowedRebalance(rep.Findings, pkgs)
	rep.Findings = dropForwards(rep.Findings, rep.Consumers)
	rep.Findings = dropAtMostOnce(rep.Findings, rep.Consumers)
	rep.Findings = dropWholeBatch(rep.Findings, rep.Root)
	rep.Findings = dropFailuresHeard(rep.Findings, rep.Root)
	rep.Findings = dropKqInOrder(rep.Findings, rep.Root)
	rep.Findings = dropAfterAck(rep.Findings, rep.Consumers)
	rep.Findings = httpClientAfterAck(rep.Findings, rep.Consumers)
	alignSeverity(rep.Findings, rep.Consumers)
	autoCommitAcks(rep.Findings, rep.Consumers)
	rep.Findings = mergeAtMostOnce(rep.Findings, rep.Consumers)
	rep.Findings = mergeAutoCommitFailures(rep.Findings, rep.Consumers)
	rep.Findings = mergeConsumerRepeats(rep.Findings, rep.Consumers)
	nameReachers(rep.Findings, rep.Consumers)
	rep.countFindings()
	if cfg.DiffBase != "" {
		dir := cfg.Dir
		if dir == "" {
			dir = "."
		}
		ch, err := gitChanges(dir, cfg.DiffBase)
		if err != nil {
			return nil, err
		}
		rep.keepChanged(ch)
	}
	return rep, nil
}

// unknownEntries returns the declared entry points, sorted, that name no
// function or method (pkgpath.Func, pkgpath.Type.Method) of pkgs or the
// packages they import.
func unknownEntries(pkgs []*packages.Package) []string {
	want := activeConfig().entries
	if len(want) == 0 {
		return nil
	}
	known := map[string]bool{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p.Types == nil {
			return
		}
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			switch o := scope.Lookup(name).(type) {
			case *types.Func:
				known[entryKey(o)] = true
			case *types.TypeName:
				if n, ok := types.Unalias(o.Type()).(*types.Named); ok {
					for m := range n.Methods() {
						known[entryKey(m)] = true
					}
				}
			}
		}
	})
	var out []string
	for e := range want {
		if !known[e] {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// generatedHeader matches the comment that marks a generated file
// (https://go.dev/s/generatedcode: "// Code generated ... DO NOT EDIT."),
// and the forms some generators write instead (goctl's "DO NOT EDIT!").
var generatedHeader = regexp.MustCompile(`^// Code generated .* DO NOT EDIT[.!]?$`)

// inGeneratedFile reports whether pos is in a generated file (a gRPC
// stub, an oapi-codegen or goctl client): a finding there is not its
// authors' to fix, and the same effect is reported where the consumer's
// own code calls into it.
func inGeneratedFile(files []*ast.File, pos token.Pos) bool {
	for _, f := range files {
		if f.FileStart <= pos && pos <= f.FileEnd {
			for _, cg := range f.Comments {
				if cg.Pos() > f.Package {
					break
				}
				for _, c := range cg.List {
					if generatedHeader.MatchString(c.Text) {
						return true
					}
				}
			}
			return false
		}
	}
	return false
}

// dropAllowedRebalance drops the visibility findings on
// kgo.BlockRebalanceOnPoll (see kgoBlockedRebalance, which sees one
// package) when any checked package calls a method named AllowRebalance:
// an application that holds its client behind its own interface allows
// the rebalance through it, in another package.
func dropAllowedRebalance(fs []Finding, pkgs []*packages.Package) []Finding {
	allowed := false
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok && lastName(call.Fun) == "AllowRebalance" {
					allowed = true
				}
				return !allowed
			})
		}
	})
	if !allowed {
		return fs
	}
	return slices.DeleteFunc(fs, func(f Finding) bool {
		return f.Check == "visibility" && strings.HasPrefix(f.Message, blockedRebalance)
	})
}

// dropAfterAck drops, in the whole-program mode, an effect finding on a
// call that every consumer reaching it makes only after it acknowledged
// the message (a worker that deletes its message first, then acts): a
// redelivery does not repeat it, since the message is gone. The risk
// there is the opposite, a loss, and earlyack reports it at the ack.
func dropAfterAck(fs []Finding, consumers []Consumer) []Finding {
	return slices.DeleteFunc(fs, func(f Finding) bool {
		return f.Check == "effect" && everyReaching(f, consumers, func(c *Consumer) bool {
			i := slices.IndexFunc(c.Effects, func(e Step) bool { return e.File == f.File && e.Line == f.Line })
			return i >= 0 && c.Effects[i].AfterAck
		})
	})
}

// leaseRisk is what an httpclient finding says a client without a timeout
// risks before the ack: the message outlives its lease and comes again
// while the first copy is in flight (HTTPClientAnalyzer's text).
const leaseRisk = "a slow server keeps the message past its lease and it is delivered again while in flight"

// afterAckRisk replaces leaseRisk on a call made after the ack: the
// message is gone from the broker, so nothing delivers it again.
const afterAckRisk = "the call comes after the message is acknowledged, so it is never retried: a crash, or a timeout the caller gives up on, while a slow server answers loses it, and the wait holds up the consumer"

// httpClientAfterAck rewords, in the whole-program mode, an httpclient
// finding on a call that every consumer reaching it makes only after it
// acknowledged the message: the per-package analysis cannot see the ack
// and says the message is redelivered while in flight, which only holds
// before the ack. After it a slow server loses the call instead (earlyack
// reports the ack itself).
func httpClientAfterAck(fs []Finding, consumers []Consumer) []Finding {
	for i := range fs {
		f := &fs[i]
		if f.Check != "httpclient" || !strings.Contains(f.Message, leaseRisk) {
			continue
		}
		if everyReaching(*f, consumers, func(c *Consumer) bool {
			j := slices.IndexFunc(c.Effects, func(e Step) bool { return e.File == f.File && e.Line == f.Line })
			return j >= 0 && c.Effects[j].AfterAck
		}) {
			f.Message = strings.Replace(f.Message, leaseRisk, afterAckRisk, 1)
		}
	}
	return fs
}

// everyReaching reports whether some consumer reaches f's line and every
// consumer that does satisfies ok.
func everyReaching(f Finding, consumers []Consumer, ok func(*Consumer) bool) bool {
	reached := false
	for i := range consumers {
		c := &consumers[i]
		if !c.reaches(f.abs, f.Line) {
			continue
		}
		if !ok(c) {
			return false
		}
		reached = true
	}
	return reached
}

// dropForwards drops, in the whole-program mode, an effect finding on a
// publish that only consumers with no database write reach: such a
// consumer forwards (routes, splits, transforms) and owns no state that a
// publish could disagree with, so there is no transaction to put an outbox
// row in. Its redelivery publishes again, which is the at-least-once
// contract every downstream consumer dedupes on the event id; a publish
// whose id is made afresh per delivery is still reported, by idemkey. A
// finding no consumer of the map reaches (a publish inside a transaction
// outside any consumer) is kept.
func dropForwards(fs []Finding, consumers []Consumer) []Finding {
	if len(consumers) == 0 {
		return fs
	}
	return slices.DeleteFunc(fs, func(f Finding) bool {
		return f.Check == "effect" && strings.Contains(f.Message, "a publish (") &&
			everyReaching(f, consumers, func(c *Consumer) bool { return len(c.Writes) == 0 })
	})
}

// redeliveryChecks are the checks whose findings say what a second
// delivery of the message does (repeats an effect, appends a row, counts
// again), or that an ack lets go of a message a redelivery would have
// brought back.
var redeliveryChecks = map[string]bool{"effect": true, "append": true, "idemkey": true, "transition": true, "checkact": true, "earlyack": true, "errack": true}

// dropAtMostOnce drops, in the whole-program mode, the findings of
// [redeliveryChecks] that only at-most-once consumers reach (core NATS
// subscriptions, Redis Pub/Sub loops, Redis queue loops that take by
// removing, whose take earlyack reports itself): nothing delivers their messages
// again, so no effect repeats, and no ack lets go of what a redelivery
// would bring back (field trial, wave 40: openuem-worker's "repeats on
// every redelivery" on core NATS request handlers). Of errack's findings
// only an ack after a failure is dropped (the advice to leave the message
// unacked brings nothing back there); a failure turned into a success
// (`return tx.Rollback()`) still answers the requester wrongly, and a Nak
// that cannot redeliver is about exactly this.
func dropAtMostOnce(fs []Finding, consumers []Consumer) []Finding {
	atMostOnce := func(c *Consumer) bool { return c.Kind == KindNATSCore || c.Kind == KindRedisPubSub || c.takes }
	if !slices.ContainsFunc(consumers, func(c Consumer) bool { return atMostOnce(&c) }) {
		return fs
	}
	return slices.DeleteFunc(fs, func(f Finding) bool {
		speaks := redeliveryChecks[f.Check] && (f.Check != "errack" || strings.HasPrefix(f.Message, "acks with ")) && !strings.HasPrefix(f.Message, takeMessage)
		return speaks && everyReaching(f, consumers, atMostOnce)
	})
}

// withModulePackages adds to patterns the packages of the main module that
// the packages they match import, directly or not: the whole-program mode
// type-checks them from source so that a consumer is followed into them (a
// handler's effect in a client package of the same module), and reports the
// findings it meets there. A module that go.mod replaces with a local
// directory and that has the main module's owner (see [ownModule]) counts as
// the main module: a monorepo's shared module (a consumer base type every
// service embeds) is the repository's own code.
func withModulePackages(dir string, env []string, tests bool, patterns []string) ([]string, error) {
	pkgs, err := packages.Load(&packages.Config{
		Mode:  packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedModule,
		Dir:   dir,
		Tests: tests,
		Env:   env,
	}, patterns...)
	if err != nil {
		return nil, fmt.Errorf("load packages: %w", err)
	}
	out := slices.Clone(patterns)
	seen := map[string]bool{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p.Module != nil && (p.Module.Main || ownModule(pkgs, p.Module)) && !seen[p.PkgPath] && !strings.HasSuffix(p.PkgPath, ".test") && p.PkgPath != "" {
			seen[p.PkgPath] = true
			out = append(out, p.PkgPath)
		}
	})
	return out, nil
}

// ownModule reports whether m is replaced by a local directory (a replace
// directive with a file path, go.mod's "replace x => ../x") and its module
// path has the host of a main module's path and, on a shared code host
// (github.com, gitlab.com, bitbucket.org, codeberg.org, gitee.com), its
// owner too. A local copy of another owner's library (a patched Sarama)
// stays that library: the checks know libraries by import path.
//
// A main module whose path names no host (module order-service, a
// service of a monorepo) has no owner to compare: a module it replaces by
// a relative path (`=> ../../pkg/aws`) is the repository's own when its
// path names no host either, or is a subdirectory of a repository on a
// shared code host (github.com/acme/shop/pkg/aws: more than owner and
// name), and is no library the checks know. A patched library's copy
// keeps the library's root path (golang.org/x/sync, github.com/IBM/sarama)
// and stays that library: field trial, wave 21 (E-Commerce-backend's
// shared SQS receive loop, which calls each service's handler).
func ownModule(pkgs []*packages.Package, m *packages.Module) bool {
	if m.Replace == nil || m.Replace.Version != "" || m.Replace.Path == "" {
		return false
	}
	if rel := m.Replace.Path; (strings.HasPrefix(rel, "./") || strings.HasPrefix(rel, "../")) && !knownLibrary(m.Path) && hostlessMain(pkgs) {
		parts := strings.Split(m.Path, "/")
		if !strings.Contains(parts[0], ".") || sharedHosts[parts[0]] && len(parts) > 3 {
			return true
		}
	}
	prefix := func(path string) string {
		parts := strings.SplitN(path, "/", 3)
		switch {
		case len(parts) >= 2 && sharedHosts[parts[0]]:
			return parts[0] + "/" + parts[1] + "/"
		default:
			return parts[0] + "/"
		}
	}
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Main && strings.HasPrefix(m.Path+"/", prefix(p.Module.Path)) {
			return true
		}
	}
	return false
}

// hostlessMain reports whether a main module's path names no host (its
// first element has no dot: "order-service").
func hostlessMain(pkgs []*packages.Package) bool {
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Main && !strings.Contains(strings.SplitN(p.Module.Path, "/", 2)[0], ".") {
			return true
		}
	}
	return false
}

// knownLibraries are the module path prefixes of the libraries the checks
// recognise by import path: the clients, the SDKs, the stores.
var knownLibraries = []string{
	"github.com/IBM/sarama", "github.com/Shopify/sarama", pathSaramaCluster, "github.com/twmb/franz-go",
	pathKafkaGo, "github.com/confluentinc/", pathWatermill, "github.com/aws/", pathGRPC,
	"github.com/zeromicro/", "gorm.io/", "github.com/jinzhu/gorm", "github.com/jackc/", pathSqlx,
	"go.mongodb.org/", "github.com/redis/", "github.com/go-redis/", "github.com/uptrace/bun",
	"entgo.io/", pathAsynq, pathAckgap,
}

// knownLibrary reports whether path is, or is under, a module the checks
// know by its path (see knownLibraries and [KnownSDKs]).
func knownLibrary(path string) bool {
	for _, p := range knownLibraries {
		if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") || strings.HasSuffix(p, "/") && strings.HasPrefix(path, p) {
			return true
		}
	}
	for p := range KnownSDKs {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// sharedHosts are code hosts whose first path element is an owner.
var sharedHosts = map[string]bool{"github.com": true, "gitlab.com": true, "bitbucket.org": true, "codeberg.org": true, "gitee.com": true}

// programOf finds the entry points of pkgs (the per-package analysis, run
// once for them alone) and builds the whole program's call graph from them.
func programOf(pkgs []*packages.Package) (*wholeProgram, error) {
	graph, err := checker.Analyze([]*analysis.Analyzer{ConsumersAnalyzer}, pkgs, nil)
	if err != nil {
		return nil, err
	}
	var roots []*Root
	var remotes []remote
	for act := range graph.All() {
		if !act.IsRoot || act.Err != nil {
			continue
		}
		c, ok := act.Result.(*Consumers)
		if !ok {
			continue
		}
		roots = append(roots, c.Roots...)
		remotes = append(remotes, c.remotes...)
	}
	debugf("entry points found: %d roots, %d remote", len(roots), len(remotes))
	return buildProgram(pkgs, roots, remotes), nil
}

// OptIn names the checks that run only when asked for (by name in
// [RunConfig.Checks] or -checks, or with "all"), each with its measured
// rate: of its findings on the held-out repositories of the field trial
// (docs/ackgapvet-field-trial.md, waves 5 to 11, each labelled by a
// reviewer against lists written by hand before the run), how many a
// maintainer would act on. The risks they name (a lease outlived, a
// message applied by halves) are real, but on real code their findings
// were almost all intended design (a configured delay, a back-off with no
// lease held, set-up built with a fresh context) or already guarded.
var OptIn = map[string]string{
	"bgcontext":  "1 of 18 findings actionable",
	"sleep":      "1 of 11 findings actionable",
	"multitx":    "0 of 7 findings actionable",
	"httpclient": "0 of 3 findings actionable",
}

// Select returns the checks named (analyzer names, e.g. "effect"), in the
// order given. For none it returns the default checks: [Analyzers] less
// the [OptIn] ones; "all" among them returns every check. An unknown name is an
// error that names it (all unknown names at once).
func Select(names []string) ([]*analysis.Analyzer, error) {
	all := Analyzers()
	if len(names) == 0 {
		return slices.DeleteFunc(all, func(a *analysis.Analyzer) bool { return OptIn[a.Name] != "" }), nil
	}
	if slices.Contains(names, "all") {
		return all, nil // all, with or without others named beside it
	}
	var out []*analysis.Analyzer
	var errs []error
	for _, n := range names {
		i := slices.IndexFunc(all, func(a *analysis.Analyzer) bool { return a.Name == n })
		if i < 0 {
			var names []string
			for _, a := range all {
				names = append(names, a.Name)
			}
			errs = append(errs, fmt.Errorf("unknown check %q (the checks: %s, or all)", n, strings.Join(names, ", ")))
			continue
		}
		out = append(out, all[i])
	}
	return out, errors.Join(errs...)
}

func toFinding(fset *token.FileSet, a *analysis.Analyzer, d analysis.Diagnostic) Finding {
	start := fset.Position(d.Pos)
	f := Finding{
		Check:    a.Name,
		Severity: Severity(d.Category),
		File:     relPath(start.Filename),
		abs:      start.Filename,
		Line:     start.Line,
		Column:   start.Column,
		Message:  diagnosticMessage(a, d),
	}
	if f.Severity == "" {
		f.Severity = SeverityMedium
	}
	if d.End.IsValid() {
		end := fset.Position(d.End)
		f.EndLine, f.EndColumn = end.Line, end.Column
	}
	for _, sf := range d.SuggestedFixes {
		fix := Fix{Message: sf.Message}
		for _, e := range sf.TextEdits {
			s, en := fset.Position(e.Pos), fset.Position(e.End)
			fix.Edits = append(fix.Edits, Edit{File: relPath(s.Filename), Line: s.Line, Column: s.Column, EndLine: en.Line, EndColumn: en.Column, NewText: string(e.NewText)})
		}
		f.Fixes = append(f.Fixes, fix)
	}
	return f
}

// sortFindings puts findings in the order of their position, then check,
// then message: two findings of one check at one call (an effect seen as
// the generated client's method and as the gRPC Invoke below it) come out
// in the same order on every run, and so do the places a merged finding
// names (field trial, wave 46: gozeroX's JSON and text runs listed them in
// different orders).
func sortFindings(fs []Finding) {
	slices.SortFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Check, b.Check), cmp.Compare(a.Message, b.Message))
	})
}

// relPath makes a path relative to the working directory when it lies below
// it, as code-scanning UIs expect.
func relPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return p
}

var debugStart = time.Now()

// debugf logs a phase's time when ACKGAPVET_DEBUG is set.
func debugf(format string, args ...any) {
	if os.Getenv("ACKGAPVET_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "ackgapvet: %6.2fs ", time.Since(debugStart).Seconds())
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}
