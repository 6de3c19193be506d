package ackgapvet

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Related is another place that a merged finding stands for (a repeat of
// the same cause in the same function or consumer): its message names the
// place too, and SARIF lists it in the result's relatedLocations.
type Related struct {
	// Check is the check that found it ("effect", "idemkey", ...).
	Check string `json:"check"`
	// File, Line and Column locate it, as in [Finding].
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column,omitempty"`
	// Message is the merged finding's own message.
	Message string `json:"message"`

	abs string
}

// absorb records f, and the places f already stood for, as places that
// into stands for.
func absorb(into *Finding, f Finding) {
	into.Severity = maxSeverity(into.Severity, f.Severity) // one cause, its highest blast radius
	into.Related = append(into.Related, Related{Check: f.Check, File: f.File, Line: f.Line, Column: f.Column, Message: f.Message, abs: f.abs})
	into.Related = append(into.Related, f.Related...)
}

// perFunctionChecks are the checks whose findings in one function share
// one cause and one fix (a sleep in a retry loop, a client without a
// timeout, a dropped context, the branches of one loop that skip a failed
// message without acking it): their repeats are merged. For errack only
// findings of the same message shape are merged (see messageShape): one
// function can hold two different acking faults.
var perFunctionChecks = map[string]bool{"sleep": true, "httpclient": true, "bgcontext": true, "lambdabatch": true, "errack": true}

// shapeNames matches what differs between two findings of one rule: the
// names of calls ("dal.CreateComment", "c.client.Do()") and line numbers.
var shapeNames = regexp.MustCompile(`[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+(\(\))?|\d+`)

// messageShape is a finding's message with its call names and numbers
// taken out: two findings with the same shape were written by the same
// rule about the same kind of fault.
func messageShape(msg string) string { return shapeNames.ReplaceAllString(msg, "_") }

// mergeRepeats keeps, of the findings of a per-function check in the same
// function of the same file, the first (findings are sorted by position),
// and names the other lines in its message: one cause, one finding. A
// suggested fix of a merged finding is dropped with it; the kept finding's
// fixes stay. An effect finding on the line of an idemkey finding is the
// same call and cause, and idemkey names the precise fix (a key, a dedupe
// record): the effect finding is dropped. So is an append finding on the
// line of a checkact finding: the insert of the message's id without ON
// CONFLICT is a dedupe record, which checkact judges.
func mergeRepeats(fs []Finding) []Finding {
	type line struct {
		file string
		line int
	}
	keyed, checked := map[line]bool{}, map[line]bool{}
	for _, f := range fs {
		switch f.Check {
		case "idemkey":
			keyed[line{f.File, f.Line}] = true
		case "checkact":
			checked[line{f.File, f.Line}] = true
		}
	}
	fs = slices.DeleteFunc(slices.Clone(fs), func(f Finding) bool {
		return f.Check == "effect" && keyed[line{f.File, f.Line}] || f.Check == "append" && checked[line{f.File, f.Line}]
	})
	type key struct{ file, fn, check, shape string }
	first := map[key]int{}
	var out []Finding
	var also = map[int][]string{}
	for _, f := range fs {
		k := key{f.File, f.Function, f.Check, ""}
		if f.Check == "errack" {
			k.shape = messageShape(f.Message)
		}
		if i, ok := first[k]; ok && perFunctionChecks[f.Check] && f.Function != "" {
			also[i] = append(also[i], strconv.Itoa(f.Line))
			absorb(&out[i], f)
			continue
		}
		first[k] = len(out)
		out = append(out, f)
	}
	for i, lines := range also {
		out[i].Message += fmt.Sprintf(" (the same in %s at line %s)", out[i].Function, strings.Join(lines, ", "))
	}
	return out
}

// repeatChecks are the checks whose findings say what a redelivery does
// again (an effect repeated, a count or a row added again, a request the
// receiver applies twice): one consumer's findings of them share one cause,
// the consumer's missing record of the event.
var repeatChecks = map[string]bool{"effect": true, "idemkey": true, "append": true}

// severityRank orders severities, the highest first.
var severityRank = map[Severity]int{SeverityCritical: 0, SeverityHigh: 1, SeverityMedium: 2, SeverityLow: 3}

// mergeConsumerRepeats merges, in the whole-program mode, the effect,
// idemkey and append findings that the same consumers reach, and only
// they, into one: the highest blast radius first (the earliest of those),
// naming the others with their checks and lines. A redelivery repeats all
// of them for one cause, the consumers' missing record of the event, and
// one change fixes them (an inbox row in the handler's transaction, outbox
// rows carried out by a relay with an idempotency key derived from the
// event id). Findings that no consumer reaches (an effect inside a
// transaction elsewhere) stay apart, and so do findings below two handlers
// of one shared loop (Consumer.Handlers): each handler is a consumer of its
// own, with its own dedupe to add.
func mergeConsumerRepeats(fs []Finding, consumers []Consumer) []Finding {
	if len(consumers) == 0 {
		return fs
	}
	groups := map[string][]int{}
	var order []string
	for i, f := range fs {
		if !repeatChecks[f.Check] {
			continue
		}
		by := reachedBy(f, consumers)
		if len(by) == 0 {
			continue
		}
		var under []int
		for _, j := range by {
			under = append(under, consumers[j].handlerAt(f.abs, f.Line))
		}
		k := fmt.Sprint(by, under)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	drop := map[int]bool{}
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		keep := g[0]
		for _, i := range g[1:] {
			if severityRank[fs[i].Severity] < severityRank[fs[keep].Severity] {
				keep = i
			}
		}
		var others []string
		for _, i := range g {
			if i != keep {
				drop[i] = true
				others = append(others, stepWhere(fs[i]))
				absorb(&fs[keep], fs[i])
			}
		}
		fs[keep].Message += fmt.Sprintf(" (the same consumer repeats, for the same cause: %s)", strings.Join(others, "; "))
	}
	return keepUndropped(fs, drop)
}

// readCommits starts an autocommit finding on kafka-go's ReadMessage with a
// GroupID, which commits the offset as it returns: nothing is delivered
// again, so what the loop does after it is done at most once.
const readCommits = "ReadMessage commits the offset as it returns"

// mergeAtMostOnce merges, in the whole-program mode, the effect, idemkey
// and append findings that only consumers committing as they read reach
// (kafka-go's ReadMessage with a GroupID, reported by autocommit) into
// that autocommit finding: no redelivery repeats them while the commit
// comes first, and the autocommit's fix (commit after the work) is what
// makes them repeat, so its finding names them and the record that keeps
// them single. A finding some other consumer reaches stays. A poison
// finding that says the message is fetched again after the process exits
// joins it too: the message was committed as it was read, so the exit
// loses it instead, the crash the autocommit finding names.
func mergeAtMostOnce(fs []Finding, consumers []Consumer) []Finding {
	commitOf := firstReached(fs, consumers, func(f Finding) bool {
		return f.Check == "autocommit" && strings.HasPrefix(f.Message, readCommits)
	})
	moved := map[int][]int{}
	var targets []int
	for i, f := range fs {
		if !repeatChecks[f.Check] {
			continue
		}
		if into, ok := everyHas(f, consumers, commitOf); ok {
			if moved[into] == nil {
				targets = append(targets, into)
			}
			moved[into] = append(moved[into], i)
		}
	}
	drop := map[int]bool{}
	for i, f := range fs {
		if f.Check != "poison" || !strings.Contains(f.Message, offsetNotCommitted) {
			continue
		}
		if into, ok := everyHas(f, consumers, commitOf); ok {
			drop[i] = true
			absorb(&fs[into], f)
			fs[into].Message += fmt.Sprintf(" (the exit on a failure at %s:%d is such a crash: the message was committed, so it is lost, not fetched again)", f.File, f.Line)
		}
	}
	for _, into := range targets {
		var names []string
		for _, i := range moved[into] {
			drop[i] = true
			names = append(names, stepWhere(fs[i]))
			absorb(&fs[into], fs[i])
		}
		fs[into].Message += fmt.Sprintf(" (once the commit follows the work, a redelivery repeats what it does: %s; record the event id with the consumer's writes and skip a message already recorded)", strings.Join(names, "; "))
	}
	return keepUndropped(fs, drop)
}

// mergeAutoCommitFailures merges an errack finding on a failure that an
// auto-commit passes over into the autocommit finding of the same
// consumers (in the whole-program mode every consumer reaching the errack
// reaches it; in the per-package mode, the same function): turning the
// auto-commit off and committing after the work is the change for both,
// with the loop stopping or seeking back on a failure instead of reading
// on, which the merged message says.
func mergeAutoCommitFailures(fs []Finding, consumers []Consumer) []Finding {
	autoOf := firstReached(fs, consumers, func(f Finding) bool { return f.Check == "autocommit" })
	drop := map[int]bool{}
	for i, f := range fs {
		if f.Check != "errack" || !strings.Contains(f.Message, "and "+autoCommitPrefix+" of") {
			continue
		}
		into, ok := everyHas(f, consumers, autoOf)
		if !ok {
			into = slices.IndexFunc(fs, func(a Finding) bool {
				return a.Check == "autocommit" && a.File == f.File && a.Function != "" && a.Function == f.Function
			})
		}
		if into < 0 {
			continue
		}
		drop[i] = true
		absorb(&fs[into], f)
		places := []string{fmt.Sprintf("%s:%d", f.File, f.Line)}
		for _, r := range f.Related {
			places = append(places, fmt.Sprintf("%s:%d", r.File, r.Line))
		}
		fs[into].Message += fmt.Sprintf(" (a failure that is dropped or only logged is committed past all the same, at %s: with the commit after the work, stop or seek back on a failure rather than read on)", strings.Join(places, ", "))
	}
	return keepUndropped(fs, drop)
}

// reachedBy returns the indexes of the consumers whose walk reaches f's
// line.
func reachedBy(f Finding, consumers []Consumer) []int {
	var by []int
	for j := range consumers {
		if consumers[j].reaches(f.abs, f.Line) {
			by = append(by, j)
		}
	}
	return by
}

// firstReached maps each consumer to the first finding that is and that
// the consumer reaches.
func firstReached(fs []Finding, consumers []Consumer, is func(Finding) bool) map[int]int {
	of := map[int]int{}
	for i, f := range fs {
		if !is(f) {
			continue
		}
		for _, j := range reachedBy(f, consumers) {
			if _, ok := of[j]; !ok {
				of[j] = i
			}
		}
	}
	return of
}

// everyHas returns target[j] of the first consumer j reaching f, when some
// consumer reaches f and every one that does has a target.
func everyHas(f Finding, consumers []Consumer, target map[int]int) (int, bool) {
	by := reachedBy(f, consumers)
	if len(by) == 0 {
		return -1, false
	}
	for _, j := range by {
		if _, ok := target[j]; !ok {
			return -1, false
		}
	}
	return target[by[0]], true
}

// keepUndropped returns fs without the findings at the dropped indexes.
func keepUndropped(fs []Finding, drop map[int]bool) []Finding {
	var out []Finding
	for i, f := range fs {
		if !drop[i] {
			out = append(out, f)
		}
	}
	return out
}

// stepWhere is how a merged finding names another: what its message says
// of the call (an effect's up to what a redelivery does; another check's
// first clause, without its consumer path), its check and its place.
func stepWhere(f Finding) string {
	what := f.Message
	if f.Check == "effect" {
		what = effectWhere(what)
	} else {
		what = consumerPath.ReplaceAllString(what, "")
		if i := strings.IndexAny(what, ":;"); i > 0 {
			what = what[:i]
		}
	}
	return fmt.Sprintf("%s [%s] at %s:%d", what, f.Check, f.File, f.Line)
}

// consumerPath matches the place a finding's message gives itself: " on
// the consumer path of KIND NAME (a → b → c)" (without a path, where the
// name ends is not known, and it stays).
var consumerPath = regexp.MustCompile(` on the consumer path of [^(,:;]*\([^)]*\)`)

// effectWhere is what an effect finding says of its call and path: its
// message up to where it says what a redelivery does.
func effectWhere(msg string) string {
	if i := strings.Index(msg, " repeats on every redelivery"); i > 0 {
		return msg[:i]
	}
	return msg
}

// maxReachers is how many consumers nameReachers names before it counts
// the rest.
const maxReachers = 4

// nameReachers adds, in the whole-program mode, to a finding on a line
// that several consumers reach (a shared client, a repository, a helper
// every handler calls) the consumers that reach it: the message's path
// names one of them, and the others repeat it too, each a consumer a
// reviewer owns (a spreadsheet append that the print and the refund
// handlers both make).
func nameReachers(fs []Finding, consumers []Consumer) {
	for i := range fs {
		by := reachedBy(fs[i], consumers)
		if len(by) < 2 {
			continue
		}
		var names []string
		for _, j := range by {
			if len(names) == maxReachers {
				names = append(names, fmt.Sprintf("%d more", len(by)-maxReachers))
				break
			}
			names = append(names, fmt.Sprintf("%s (%s:%d)", consumers[j].Name, consumers[j].File, consumers[j].Line))
		}
		fs[i].Message += fmt.Sprintf(" (%d consumers reach it: %s)", len(by), strings.Join(names, ", "))
	}
}
