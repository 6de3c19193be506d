package ackgapvet

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/tools/go/analysis"
)

// Severity ranks a finding by its blast radius: what a repeated effect
// touches.
type Severity string

// Severities, highest first.
const (
	SeverityCritical Severity = "critical" // money moves twice
	SeverityHigh     Severity = "high"     // a person is messaged twice
	SeverityMedium   Severity = "medium"   // a counter or inventory drifts; the default
	SeverityLow      Severity = "low"      // a cache is refreshed twice
)

// SeverityEnv names the environment variable that overrides the blast-radius
// patterns, in the form accepted by [SetSeverityPatterns]. It works in every
// way of running the checker (standalone, go vet -vettool, analysistest).
const SeverityEnv = "ACKGAPVET_SEVERITY"

// DefaultSeverityPatterns are the blast-radius patterns used unless
// [SetSeverityPatterns] or [SeverityEnv] says otherwise. Patterns are
// case-insensitive regular expressions matched against the names around a
// finding (the called function, the handler, string arguments such as topic
// names and URLs); the first severity whose pattern matches wins, highest
// first.
var DefaultSeverityPatterns = map[Severity]string{
	SeverityCritical: `charge|payment|refund|transfer|payout|invoice|billing|wallet|ledger`,
	SeverityHigh:     `email|mail|sms|push|notif|message_user|webhook`,
	SeverityMedium:   `inventory|stock|counter|balance|quota|incr|count`,
	SeverityLow:      `cache|refresh|warm|dlq|dead.?letter`,
}

var (
	severityMu    sync.Mutex
	severityRules []severityRule
	severityErr   error
	severityOnce  sync.Once
)

type severityRule struct {
	sev Severity
	re  *regexp.Regexp
}

// SetSeverityPatterns replaces the blast-radius patterns. spec is a
// semicolon-separated list of severity=regexp, e.g.
// "critical=charge|payout;low=cache"; severities not named keep their
// default pattern. It returns an error naming a bad severity or pattern and
// then changes nothing.
func SetSeverityPatterns(spec string) error {
	pats := map[Severity]string{}
	for k, v := range DefaultSeverityPatterns {
		pats[k] = v
	}
	var errs []error
	for part := range strings.SplitSeq(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		sev := Severity(strings.TrimSpace(k))
		if _, known := DefaultSeverityPatterns[sev]; !ok || !known {
			errs = append(errs, fmt.Errorf("severity pattern %q: want <critical|high|medium|low>=<regexp>", part))
			continue
		}
		pats[sev] = v
	}
	rules, err := compileSeverity(pats)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid severity patterns: %w", err)
	}
	severityMu.Lock()
	severityRules = rules
	severityMu.Unlock()
	return nil
}

func compileSeverity(pats map[Severity]string) ([]severityRule, error) {
	var rules []severityRule
	var errs []error
	for _, sev := range []Severity{SeverityCritical, SeverityHigh, SeverityMedium, SeverityLow} {
		if pats[sev] == "" {
			continue
		}
		re, err := regexp.Compile("(?i)" + pats[sev])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sev, err))
			continue
		}
		rules = append(rules, severityRule{sev, re})
	}
	return rules, errors.Join(errs...)
}

func currentRules() ([]severityRule, error) {
	severityOnce.Do(func() {
		if spec := os.Getenv(SeverityEnv); spec != "" {
			if err := SetSeverityPatterns(spec); err != nil {
				severityErr = fmt.Errorf("%s: %w", SeverityEnv, err)
			}
		}
	})
	severityMu.Lock()
	defer severityMu.Unlock()
	if severityRules == nil {
		rules, err := compileSeverity(DefaultSeverityPatterns)
		if err != nil {
			return nil, err
		}
		severityRules = rules
	}
	return severityRules, severityErr
}

// SeverityOf ranks the names around a finding; SeverityMedium when nothing
// matches.
func SeverityOf(names ...string) Severity {
	rules, _ := currentRules()
	for _, r := range rules {
		for _, n := range names {
			if n != "" && r.re.MatchString(n) {
				return r.sev
			}
		}
	}
	return SeverityMedium
}

// IgnoreDirective is the comment that suppresses a finding on its line or the
// line below: //ackgapvet:ignore <check> <reason>. The reason is required; a
// directive without one suppresses nothing.
const IgnoreDirective = "//ackgapvet:ignore"

// reporter reports diagnostics with a severity prefix, honouring ignore
// directives.
type reporter struct {
	pass    *analysis.Pass
	ignores map[string]map[int][]string // file -> line -> checks
	// bare are the directives that name a check but no reason: they
	// suppress nothing, and the finding they meant to silence says so.
	bare map[string]map[int][]string
}

func newReporter(pass *analysis.Pass) (*reporter, error) {
	if _, err := currentRules(); err != nil {
		return nil, err
	}
	r := &reporter{pass: pass, ignores: map[string]map[int][]string{}, bare: map[string]map[int][]string{}}
	for _, f := range pass.Files {
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				rest, ok := strings.CutPrefix(c.Text, IgnoreDirective)
				if !ok {
					continue
				}
				fields := strings.Fields(rest)
				if len(fields) == 0 {
					continue
				}
				p := pass.Fset.Position(c.Slash)
				into := r.ignores
				if len(fields) < 2 { // no reason: not honoured
					into = r.bare
				}
				if into[p.Filename] == nil {
					into[p.Filename] = map[int][]string{}
				}
				into[p.Filename][p.Line] = append(into[p.Filename][p.Line], fields[0])
			}
		}
	}
	return r, nil
}

func (r *reporter) ignored(pos token.Pos) bool {
	return r.directive(r.ignores, pos)
}

// directive reports whether dirs holds a directive for this check (or
// "all") on pos's line or the line above.
func (r *reporter) directive(dirs map[string]map[int][]string, pos token.Pos) bool {
	p := r.pass.Fset.Position(pos)
	for _, line := range []int{p.Line, p.Line - 1} {
		for _, check := range dirs[p.Filename][line] {
			if check == r.pass.Analyzer.Name || check == "all" {
				return true
			}
		}
	}
	return false
}

// checkNames holds the name of every check, for directives that name
// none (filled by init: Analyzers' checks report through this file).
var checkNames = map[string]bool{}

func init() {
	for _, a := range Analyzers() {
		checkNames[a.Name] = true
	}
}

// unknownDirective returns the first check named by a directive on pos's
// line or the line above that is no check (a typo: `efect`), or "".
func (r *reporter) unknownDirective(pos token.Pos) string {
	p := r.pass.Fset.Position(pos)
	for _, dirs := range []map[string]map[int][]string{r.ignores, r.bare} {
		for _, line := range []int{p.Line, p.Line - 1} {
			for _, check := range dirs[p.Filename][line] {
				if check != "all" && !checkNames[check] {
					return check
				}
			}
		}
	}
	return ""
}

// report emits a finding at n: "<severity>: <msg> [<check>]", with
// optional fixes. The check's name ends the message because go vet
// (unitchecker) prints only the position and the message, and the name is
// what //ackgapvet:ignore takes; the standalone output strips it again
// (see diagnosticMessage) and prints it in its own place.
func (r *reporter) report(n ast.Node, sev Severity, msg string, fixes ...analysis.SuggestedFix) {
	if r.ignored(n.Pos()) {
		return
	}
	if r.directive(r.bare, n.Pos()) {
		msg += " (the " + IgnoreDirective + " above gives no reason, so it suppresses nothing: add one)"
	}
	if name := r.unknownDirective(n.Pos()); name != "" {
		msg += fmt.Sprintf(" (the %s above names %q, which is no check, so it suppresses nothing: name %s or all)", IgnoreDirective, name, r.pass.Analyzer.Name)
	}
	r.pass.Report(analysis.Diagnostic{
		Pos:            n.Pos(),
		End:            n.End(),
		Category:       string(sev),
		Message:        string(sev) + ": " + msg + checkTag(r.pass.Analyzer.Name),
		SuggestedFixes: fixes,
	})
}

// checkTag is the suffix report puts on every message: " [<check>]".
func checkTag(check string) string { return " [" + check + "]" }

// diagnosticMessage returns a diagnostic's message without its severity
// prefix and check suffix (see report).
func diagnosticMessage(a *analysis.Analyzer, d analysis.Diagnostic) string {
	return strings.TrimSuffix(strings.TrimPrefix(d.Message, d.Category+": "), checkTag(a.Name))
}

// replaceFix suggests replacing node n with text.
func replaceFix(msg string, n ast.Node, text string) analysis.SuggestedFix {
	return analysis.SuggestedFix{
		Message:   msg,
		TextEdits: []analysis.TextEdit{{Pos: n.Pos(), End: n.End(), NewText: []byte(text)}},
	}
}
