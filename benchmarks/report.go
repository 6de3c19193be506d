package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report is what one invocation measured.
type report struct {
	opts     *options
	backends []backend
	facts    []fact
	cells    []*cell
	e2e      []*e2eCell // the end-to-end workload's cells
	elapsed  time.Duration
}

// The targets of issue 6, checked in the targets table.
const (
	targetSafeOverHand    = 1.5
	targetSafeOverCeiling = 0.75
	targetCeilingConc     = 16
	targetOverDedup       = 2.0
	targetWholeRun        = 5 * time.Minute
)

func machineFacts(ctx context.Context, backends []backend) ([]fact, error) {
	facts := []fact{
		{"date", time.Now().UTC().Format("2006-01-02 15:04 MST")},
		{"CPUs", fmt.Sprintf("%d (GOMAXPROCS %d), %s", runtime.NumCPU(), runtime.GOMAXPROCS(0), cpuModel())},
		{"Go", fmt.Sprintf("%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)},
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		facts = append(facts, fact{"kernel", strings.TrimSpace(string(b))})
	}
	facts = append(facts, fact{"broker", "Watermill GoChannel through brokers/gochannelbroker (Publish returns once the message is acked), Watermill v1.5.2"})
	for _, b := range backends {
		f, err := b.facts(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: facts: %w", b.name(), err)
		}
		facts = append(facts, f...)
	}
	return facts, nil
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown model"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown model"
}

// find returns the cell of store ("" for none), k, c and rate, or nil.
func (r *report) find(store string, k kind, c int, rate float64) *cell {
	for _, x := range r.cells {
		name := ""
		if x.be != nil {
			name = x.be.name()
		}
		if name == store && x.kind == k && x.concurrency == c && x.dupRate == rate && len(x.results) > 0 {
			return x
		}
	}
	return nil
}

func (r *report) allCorrect() bool {
	for _, c := range r.cells {
		if ok, _ := c.allCorrect(); !ok {
			return false
		}
	}
	for _, c := range r.e2e {
		if ok, _ := c.allCorrect(); !ok {
			return false
		}
	}
	return true
}

func fmtStat(s stat, f string) string {
	return fmt.Sprintf(f+" ["+f+"–"+f+"]", s.med, s.min, s.max)
}

func correctMark(c *cell) string {
	if ok, why := c.allCorrect(); !ok {
		return "**no**: " + why
	}
	return "yes"
}

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	o := r.opts
	w("# ackgap benchmarks\n\n")
	w("Produced by:\n\n```sh\n%s\n```\n\n", strings.TrimSpace("go run ./benchmarks "+strings.Join(o.args, " ")))
	w("%d runs per cell of at most %s or %d messages each; tables show the median with [min–max]. Whole run: %s.\n",
		o.runs, o.duration, o.messages, r.elapsed.Round(time.Second))
	w("Ratios pair the runs of two workloads by their order (they ran one after the other) and show the median of the per-run ratios.\n")
	w("Workloads and columns: [README.md](README.md).\n\n")

	w("## Machine\n\n| fact | value |\n|---|---|\n")
	for _, f := range r.facts {
		w("| %s | %s |\n", f.name, f.value)
	}

	w("\n## Throughput (no duplicates)\n\n")
	w("| store | concurrency | workload | msg/s | µs/msg (wall) | CPU µs/msg: harness + server | allocs/msg | correct |\n|---|---:|---|---:|---:|---:|---:|---|\n")
	for _, be := range r.backends {
		for _, c := range o.concurrency {
			for _, k := range o.workloads {
				x := r.find(be.name(), k, c, 0)
				if x == nil {
					continue
				}
				rates := x.rates()
				w("| %s | %d | %s | %s | %.0f | %s | %.0f | %s |\n", be.name(), c, k, fmtStat(rates, "%.0f"),
					1e6/rates.med, cpuCol(x), x.perMsg(func(r *result) float64 { return float64(r.mallocs) }).med, correctMark(x))
			}
		}
	}

	w("\n## Ratios\n\n")
	w("Throughput of safe over the other workload, paired runs, median [min–max]; in parentheses the other workload's CPU per message (harness + server) over safe's, ")
	w("which other load on a shared machine does not move, and which predicts the throughput ratio where the machine is CPU-bound (concurrency 16).\n\n")
	w("| store | concurrency | safe / hand-written | safe / ceiling | safe / unsafe | safe / safe-addoutbox |\n|---|---:|---:|---:|---:|---:|\n")
	for _, be := range r.backends {
		for _, c := range o.concurrency {
			safe := r.find(be.name(), kindSafe, c, 0)
			if safe == nil {
				continue
			}
			cols := make([]string, 0, 4)
			for _, k := range []kind{kindHand, kindCeiling, kindUnsafe, kindSafeAdd} {
				other := r.find(be.name(), k, c, 0)
				if other == nil {
					cols = append(cols, "–")
					continue
				}
				cols = append(cols, fmt.Sprintf("%s (%.2f)", fmtStat(ratio(safe, other), "%.2f"), cpuPerMsg(other)/cpuPerMsg(safe)))
			}
			w("| %s | %d | %s |\n", be.name(), c, strings.Join(cols, " | "))
		}
	}

	w("\n## Targets\n\n")
	w("Met when every run meets the target, missed when none does, unclear when the runs fall on both sides (the median is shown too); in parentheses the ratio of CPU per message.\n\n")
	w("| target | measured | met |\n|---|---:|---|\n")
	met := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	atLeast := func(s stat, target float64) string {
		switch {
		case s.min >= target:
			return "yes"
		case s.max < target:
			return "**no**"
		}
		return "unclear"
	}
	for _, store := range []string{"postgres", "mariadb"} {
		for _, c := range o.concurrency {
			safe, hand := r.find(store, kindSafe, c, 0), r.find(store, kindHand, c, 0)
			if safe == nil || hand == nil {
				continue
			}
			s := ratio(safe, hand)
			w("| safe / hand-written ≥ %.1f, %s, concurrency %d | %s (CPU %.2f) | %s |\n", targetSafeOverHand, store, c, fmtStat(s, "%.2f"),
				cpuPerMsg(hand)/cpuPerMsg(safe), atLeast(s, targetSafeOverHand))
		}
		if safe, ceil := r.find(store, kindSafe, targetCeilingConc, 0), r.find(store, kindCeiling, targetCeilingConc, 0); safe != nil && ceil != nil {
			s := ratio(safe, ceil)
			w("| safe / ceiling ≥ %.2f, %s, concurrency %d | %s (CPU %.2f) | %s |\n", targetSafeOverCeiling, store, targetCeilingConc, fmtStat(s, "%.2f"),
				cpuPerMsg(ceil)/cpuPerMsg(safe), atLeast(s, targetSafeOverCeiling))
		}
	}
	dedup := r.find("", kindDedup, 1, 0)
	if inbox := r.find("sqlite", kindInbox, 1, 0); inbox != nil && dedup != nil {
		s := ratioNs(inbox, dedup)
		cpu := func(c *cell) float64 { return c.perMsg(func(r *result) float64 { return float64(r.cpuSelf) }).med }
		w("| ackgap (inbox on SQLite, durable) within %.0fx of Watermill's Deduplicator (in memory) per message, GoChannel, concurrency 1 | %sx wall (%.2fx CPU) | %s |\n",
			targetOverDedup, fmtStat(s, "%.2f"), cpu(inbox)/cpu(dedup), atLeast(stat{med: -s.med, min: -s.max, max: -s.min}, -targetOverDedup))
	}
	for _, be := range r.backends {
		for _, k := range []kind{kindBatched, kindBatched10} {
			for _, c := range o.concurrency {
				batched, unsafe := r.find(be.name(), k, c, 0), r.find(be.name(), kindUnsafe, c, 0)
				if batched == nil || unsafe == nil {
					continue
				}
				s := ratio(batched, unsafe)
				w("| %s / unsafe ≥ %.0f (batches of %d, one transaction each), %s, concurrency %d | %s (CPU %.2f) | %s |\n", k, targetBatchedOverUnsafe,
					batchSize(k), be.name(), c, fmtStat(s, "%.2f"), cpuPerMsg(unsafe)/cpuPerMsg(batched), atLeast(s, targetBatchedOverUnsafe))
			}
		}
	}
	if slices.Equal(o.stores, defaultStores) {
		w("| whole run under %s | %s | %s |\n", targetWholeRun, r.elapsed.Round(time.Second), met(r.elapsed < targetWholeRun))
	} else {
		w("| whole run under %s (for the default -stores %s only) | %s | – |\n", targetWholeRun, strings.Join(defaultStores, ","), r.elapsed.Round(time.Second))
	}

	if len(o.dupRates) > 0 {
		w("\n## Duplicates (concurrency %d)\n\n", o.dupConc)
		w("Duplicates are copies of one of the %d events before, dealt to any partition, so some arrive while the original is in flight.\n", dupWindow)
		w("State changes are applied transitions (the sum of the orders' versions); effects are charge outbox rows (receipts are checked too).\n\n")
		w("| store | workload | duplicates | msg/s | messages | unique events | state changes | effects | correct |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n")
		for _, be := range r.backends {
			for _, k := range o.workloads {
				for _, rate := range o.dupRates {
					x := r.find(be.name(), k, o.dupConc, rate)
					if x == nil {
						continue
					}
					m := x.medianRun()
					effects := fmt.Sprint(m.counts.charges)
					if k == kindUnsafe {
						effects = "– (none recorded)"
					}
					w("| %s | %s | %.0f %% | %s | %d | %d | %d | %s | %s |\n", be.name(), k, rate*100, fmtStat(x.rates(), "%.0f"),
						m.msgs, m.distinct, m.counts.transitions, effects, correctMark(x))
				}
			}
		}
	}

	if dedup != nil {
		w("\n## Framework overhead (GoChannel, concurrency 1, empty handler)\n\n")
		w("Per message, wall time from publish to ack (GoChannel hands over and waits for the ack), and heap allocations of the whole process.\n\n")
		w("| workload | store | durable | ns/msg (wall) | CPU ns/msg: harness + server | allocs/msg | B/msg | correct |\n|---|---|---|---:|---:|---:|---:|---|\n")
		for _, x := range r.cells {
			if x.kind != kindWatermill && x.kind != kindDedup && x.kind != kindInbox {
				continue
			}
			store, durable := "memory", "no"
			if x.be != nil {
				store, durable = x.be.name(), "yes"
			}
			cpu := fmt.Sprintf("%.0f", x.perMsg(func(r *result) float64 { return float64(r.cpuSelf.Nanoseconds()) }).med)
			if srv := x.perMsg(func(r *result) float64 { return float64(r.cpuSrv.Nanoseconds()) }).med; srv > 0 {
				cpu += fmt.Sprintf(" + %.0f", srv)
			}
			w("| %s | %s | %s | %s | %s | %.0f | %.0f | %s |\n", x.kind, store, durable,
				fmtStat(x.perMsg(func(r *result) float64 { return float64(r.elapsed.Nanoseconds()) }), "%.0f"), cpu,
				x.perMsg(func(r *result) float64 { return float64(r.mallocs) }).med,
				x.perMsg(func(r *result) float64 { return float64(r.bytes) }).med, correctMark(x))
		}
		w("\nThe billing handler per message at concurrency 1 (from the throughput table):\n\n")
		w("| store | safe µs/msg | unsafe µs/msg | safe / unsafe (time per message) |\n|---|---:|---:|---:|\n")
		for _, be := range r.backends {
			safe, unsafe := r.find(be.name(), kindSafe, 1, 0), r.find(be.name(), kindUnsafe, 1, 0)
			if safe == nil || unsafe == nil {
				continue
			}
			w("| %s | %.0f | %.0f | %s |\n", be.name(), 1e6/safe.rates().med, 1e6/unsafe.rates().med, fmtStat(ratio(unsafe, safe), "%.2f"))
		}
	}

	for _, be := range r.backends {
		if be.name() == "mariadb" {
			w("\n%s", mariaCellsNote)
		}
	}
	r.e2eMarkdown(&b)
	return b.String()
}

// ratioNs returns the per-run ratios of a's time per message to b's.
func ratioNs(a, b *cell) stat {
	n := min(len(a.results), len(b.results))
	vs := make([]float64, n)
	for i := range n {
		vs[i] = b.results[i].rate() / a.results[i].rate()
	}
	return statOf(vs)
}

// medianRun returns the run whose throughput is the median.
func (c *cell) medianRun() *result {
	return &c.results[medianIndex(len(c.results), func(i int) float64 { return c.results[i].rate() })]
}

// medianIndex returns the index, of n runs (n > 0), of the run whose
// throughput rate(i) is the median.
func medianIndex(n int, rate func(i int) float64) int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		ra, rb := rate(a), rate(b)
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	return idx[n/2]
}

// cpuPerMsg is the median CPU time per message, harness and server
// together, in ns.
func cpuPerMsg(c *cell) float64 {
	return c.perMsg(func(r *result) float64 { return float64(r.cpuSelf + r.cpuSrv) }).med
}

// cpuCol is the median CPU time per message of this process and of the
// database server's processes that served it (PostgreSQL backends; SQLite
// runs in this process), in µs.
func cpuCol(c *cell) string {
	self := c.perMsg(func(r *result) float64 { return float64(r.cpuSelf.Nanoseconds()) / 1e3 })
	srv := c.perMsg(func(r *result) float64 { return float64(r.cpuSrv.Nanoseconds()) / 1e3 })
	if srv.med == 0 {
		return fmt.Sprintf("%.0f", self.med)
	}
	return fmt.Sprintf("%.0f + %.0f", self.med, srv.med)
}
