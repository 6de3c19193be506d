// Command ackgapvet checks Kafka, SQS and Watermill consumers for the code a
// redelivered message would hurt: effects made from a handler or inside a
// transaction, writes around the handler's transaction, acks before the work,
// check-then-act dedupes, missing idempotency keys, ignored guarded
// transitions and lease risks. See package ackgapvet for the checks.
//
// Three ways to run it from your module (go run of this path fails there
// with "missing go.sum entry": add it as a tool, or go install it):
//
//	go get -tool github.com/ackgap/ackgap/cmd/ackgapvet@latest
//	go tool ackgapvet ./...
//	go tool ackgapvet -format sarif ./... > ackgapvet.sarif
//	go vet -vettool=$(which ackgapvet) ./...   # after go install
//
// Standalone, it writes findings to standard output as vet-style text
// (default), JSON (-format json) or SARIF 2.1.0 (-format sarif). Under go vet
// it speaks vet's protocol (unitchecker) and go vet prints the findings.
//
// Suppress a finding with a comment on its line or the line above:
//
//	//ackgapvet:ignore <check> <reason>
//
// ackgapvet -version prints "ackgapvet <version>" (the version SARIF
// reports as driver.version) and exits 0.
//
// Exit codes (standalone): 0 no findings, 1 usage or load error, 3 findings
// (map exits 0 whatever it shows).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/ackgap/ackgap/ackgapvet"
)

// Exit codes of the standalone mode.
const (
	exitClean    = 0
	exitError    = 1
	exitFindings = 3
)

func main() {
	args := os.Args[1:]
	if vetMode(args) {
		unitchecker.Main(ackgapvet.Analyzers()...) // does not return
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// vetMode reports whether go vet invoked the tool: it asks -V=full and -flags,
// then passes a vet.cfg file.
func vetMode(args []string) bool {
	if len(args) == 0 {
		return false
	}
	return args[0] == "-V=full" || args[0] == "-flags" || strings.HasSuffix(args[len(args)-1], ".cfg")
}

func run(args []string, stdout, stderr io.Writer) int {
	mapMode := len(args) > 0 && args[0] == "map"
	if mapMode {
		args = args[1:]
	}
	fs := flag.NewFlagSet("ackgapvet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", envOr("ACKGAPVET_FORMAT", "text"), "output: text, json, markdown or sarif (map: text, json or markdown) (env ACKGAPVET_FORMAT)")
	severity := fs.String("severity", os.Getenv(ackgapvet.SeverityEnv), "blast-radius patterns, e.g. 'critical=charge|payout;low=cache' (env "+ackgapvet.SeverityEnv+")")
	checks := fs.String("checks", os.Getenv("ACKGAPVET_CHECKS"), "comma-separated checks to run, or all; default all but the opt-in bgcontext, httpclient, multitx and sleep (env ACKGAPVET_CHECKS)")
	tests := fs.Bool("test", false, "also check test files")
	perPackage := fs.Bool("per-package", false, "only the per-package analysis (what go vet -vettool runs): faster, does not follow interfaces, function values, goroutines or channels")
	version := fs.Bool("version", false, "print the version (the one SARIF reports as driver.version) and exit")
	diff := fs.String("diff", "", "report only the consumers whose reachable code changed since this git revision, e.g. -diff origin/main")
	var entries []string
	fs.Func("entry", "declare a consumer entry point: pkgpath.Func or pkgpath.Type.Method (repeatable; adds to the entries of "+ackgapvet.ConfigFile+")", func(v string) error {
		entries = append(entries, v)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprint(stderr, `ackgapvet: find the consumers that a duplicate delivery would hurt.

Usage:
  ackgapvet [flags] [packages]        (default ./...)
  ackgapvet map [flags] [packages]    the consumer map: entry points, acks, effects, dedupe
  go vet -vettool=$(which ackgapvet) [packages]

Example:
  ackgapvet ./...
  ackgapvet -format sarif ./... > ackgapvet.sarif
  ackgapvet map -format markdown ./...
  ackgapvet -diff origin/main ./...
  ackgapvet -entry example.com/shop/worker.Consumer.Loop ./...
  ackgapvet -version

Configuration: an optional `+ackgapvet.ConfigFile+` at the module root declares
entry points ("entries") and effect overrides ("effects", "not_effects");
see docs/ackgapvet.md.

Suppress a finding: //ackgapvet:ignore <check> <reason> on its line or the line above.
Exit codes: 0 no findings, 1 usage or load error, 3 findings.

Flags:
`)
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nChecks:")
		for _, a := range ackgapvet.Analyzers() {
			short, _, _ := strings.Cut(a.Doc, "\n")
			fmt.Fprintf(stderr, "  %-11s %s\n", a.Name, short)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitClean
		}
		return exitError
	}
	if *version {
		fmt.Fprintln(stdout, "ackgapvet", ackgapvet.Version())
		return exitClean
	}
	writers := map[string]func(io.Writer, *ackgapvet.Report) error{
		"text": ackgapvet.WriteText, "json": ackgapvet.WriteJSON, "sarif": ackgapvet.WriteSARIF, "markdown": ackgapvet.WriteMarkdown,
	}
	if mapMode {
		writers["text"], writers["markdown"] = ackgapvet.WriteMap, ackgapvet.WriteMapMarkdown
		delete(writers, "sarif")
	}
	write, ok := writers[*format]
	if !ok {
		want := "text, json, markdown or sarif"
		if mapMode {
			want = "text, json or markdown"
		}
		fmt.Fprintf(stderr, "ackgapvet: -format %q: want %s\n", *format, want)
		return exitError
	}
	if mapMode && *perPackage {
		fmt.Fprintln(stderr, "ackgapvet: map needs the whole-program mode: drop -per-package")
		return exitError
	}
	if *severity != "" {
		if err := ackgapvet.SetSeverityPatterns(*severity); err != nil {
			source := ackgapvet.SeverityEnv // the flag's default
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "severity" {
					source = "-severity"
				}
			})
			fmt.Fprintf(stderr, "ackgapvet: %s: %v\n", source, err)
			return exitError
		}
	}
	cfg := &ackgapvet.RunConfig{Patterns: fs.Args(), Tests: *tests, PerPackage: *perPackage, DiffBase: *diff, Entries: entries}
	if *checks != "" {
		cfg.Checks = strings.Split(*checks, ",")
	}
	rep, err := ackgapvet.Run(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "ackgapvet:", err)
		return exitError
	}
	for _, s := range rep.Skipped {
		fmt.Fprintln(stderr, "ackgapvet: skipped (does not load or type-check):", s)
	}
	for _, e := range rep.UnknownEntries {
		fmt.Fprintf(stderr, "ackgapvet: declared entry point %s names no function or method of the loaded packages (want pkgpath.Func or pkgpath.Type.Method): it declares nothing\n", e)
	}
	if err := write(stdout, rep); err != nil {
		fmt.Fprintln(stderr, "ackgapvet:", err)
		return exitError
	}
	if len(rep.Skipped) > 0 {
		// Said whatever else is reported: findings in the packages that
		// were checked do not make the others checked.
		fmt.Fprintf(stderr, "ackgapvet: %d package(s) not checked\n", len(rep.Skipped))
	}
	if len(rep.Findings) > 0 && !mapMode {
		return exitFindings
	}
	if len(rep.Skipped) > 0 || len(rep.UnknownEntries) > 0 {
		// A package that was not checked is a load error, not a clean
		// result: a mistyped pattern must not pass CI, nor a mistyped
		// entry point.
		return exitError
	}
	return exitClean
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
