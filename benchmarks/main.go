// Command benchmarks measures ackgap's safe consumer side by side with an
// unsafe one, the same pattern written by hand, and the database's own
// ceiling, on PostgreSQL and SQLite, through Watermill's GoChannel, then
// end to end, publish to effect, on GoChannel, Kafka and SQS with and
// without telemetry, and prints a markdown table (and writes it to
// benchmarks/RESULTS.md).
//
//	go run ./benchmarks                      # everything, about 4 minutes
//	go run ./benchmarks -stores sqlite -concurrency 1 -duration 500ms
//	go run ./benchmarks -soak 10m            # the soak: killed processes, resources, invariants
//	go run ./benchmarks -soak 5m -soak-store mariadb  # the same on MariaDB (-mariadb-dsn)
//
// See benchmarks/README.md for the workloads and what the columns mean.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ackgap/ackgap/examples/billing/billingsim"
)

// allStores are the stores -stores accepts, in table order.
var allStores = []string{"postgres", "sqlite", "mariadb"}

// defaultStores are -stores' default: the whole run of these stays under
// targetWholeRun; mariadb is added by hand (-stores postgres,sqlite,mariadb).
var defaultStores = []string{"postgres", "sqlite"}

// Defaults of the flags.
const (
	dsnDefault         = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	durationDefault    = 500 * time.Millisecond
	messagesDefault    = 20000
	runsDefault        = 5
	outDefault         = "benchmarks/RESULTS.md"
	dupConcDefault     = 4
	concurrencyDefault = "1,4,16"
)

// options are the command's flags.
type options struct {
	stores      []string
	workloads   []kind
	concurrency []int
	dupRates    []float64
	dupConc     int
	duration    time.Duration
	messages    int
	runs        int
	dsn         string
	mariaDSN    string
	e2e         e2eOptions
	out         string
	overhead    bool
	cpuprofile  string
	memprofile  string
	kafkaModes  kmOptions
	sqsModes    smOptions
	soak        soakOptions
	args        []string
}

func main() {
	if ran, code := billingsim.RunSoakChild(); ran {
		os.Exit(code) // a consumer or relay process of the soak
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "benchmarks:", err)
		return 2
	}
	if o.soak.duration > 0 {
		return runSoak(ctx, o, stdout, stderr)
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			fmt.Fprintln(stderr, "benchmarks:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "benchmarks:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if o.memprofile != "" {
		defer func() {
			f, err := os.Create(o.memprofile)
			if err == nil {
				err = errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
			}
			if err != nil {
				fmt.Fprintln(stderr, "benchmarks:", err)
			}
		}()
	}
	if o.kafkaModes.on {
		return runKafkaModesCmd(ctx, o, stdout, stderr)
	}
	if o.sqsModes.on {
		return runSQSModesCmd(ctx, o, stdout, stderr)
	}
	rep, err := bench(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "benchmarks:", err)
		return 1
	}
	text := rep.markdown()
	fmt.Fprint(stdout, text)
	if o.out != "" {
		if err := writeKeepingSections(o.out, text); err != nil {
			fmt.Fprintln(stderr, "benchmarks:", err)
			return 1
		}
		fmt.Fprintln(stderr, "benchmarks: wrote", o.out)
	}
	if !rep.allCorrect() {
		fmt.Fprintln(stderr, "benchmarks: some runs were not correct: see the correct column")
		return 1
	}
	return 0
}

func parse(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("benchmarks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{args: args}
	storesFlag := fs.String("stores", strings.Join(defaultStores, ","), "stores to measure: "+strings.Join(allStores, ", "))
	workloadsFlag := fs.String("workloads", joinKinds(dbKinds), "database workloads to measure")
	concFlag := fs.String("concurrency", concurrencyDefault, "concurrency levels: partitions (handlers in flight, pool connections busy)")
	dupFlag := fs.String("dup-rates", "0,0.1,0.5", "duplicate rates of the duplicates table (fractions of the messages)")
	fs.IntVar(&o.dupConc, "dup-concurrency", dupConcDefault, "concurrency of the duplicates table")
	fs.DurationVar(&o.duration, "duration", durationDefault, "length of one run of one cell")
	fs.IntVar(&o.messages, "messages", messagesDefault, "messages per run at most (a run ends at -duration or when they are all acked)")
	fs.IntVar(&o.runs, "runs", runsDefault, "runs per cell: the table shows their median, minimum and maximum")
	fs.StringVar(&o.dsn, "dsn", dsnDefault, "PostgreSQL database: the harness creates a schema of its own in it and drops it after")
	fs.StringVar(&o.mariaDSN, "mariadb-dsn", envOr("TEST_MYSQL_DSN", mariaDSNDefault),
		"MariaDB server of the mariadb store (driver form or mysql:// URL; default: $TEST_MYSQL_DSN, else the local server): the harness creates a database of its own on it and drops it after")
	checkE2E := e2eFlags(fs, &o.e2e)
	fs.StringVar(&o.out, "out", outDefault, "markdown file to write the results to; empty: standard output only")
	fs.BoolVar(&o.overhead, "overhead", true, "measure the framework overhead table (GoChannel, empty handlers, concurrency 1)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&o.memprofile, "memprofile", "", "write an allocation profile of the whole run to this file (at its end)")
	fs.BoolVar(&o.kafkaModes.on, "kafka-modes", false, "run only the Kafka ordering modes comparison (issue #11) and write its section of -out")
	fs.StringVar(&o.kafkaModes.store, "kafka-modes-store", kmStorePostgres, "database of the Kafka ordering modes comparison: "+strings.Join(kmStores, ", ")+
		" (mariadb: the server of -mariadb-dsn, its section of -out is its own)")
	fs.IntVar(&o.kafkaModes.events, "kafka-modes-events", 2000, "events per run of the Kafka ordering modes comparison")
	fs.IntVar(&o.kafkaModes.runs, "kafka-modes-runs", 2, "runs per cell of the Kafka ordering modes comparison")
	kmDelays := fs.String("kafka-modes-delays", "0,20ms", "provider answer delays of the Kafka ordering modes comparison")
	fs.BoolVar(&o.kafkaModes.hotKey, "kafka-modes-hot", true, "add a hot-key run (one key takes half the events) to the Kafka ordering modes comparison")
	kmOnly := fs.String("kafka-modes-only", "", "comma-separated modes of the Kafka ordering modes comparison to run (default all: "+strings.Join(kmModes, ", ")+"); targets whose modes did not run read 0")
	fs.BoolVar(&o.sqsModes.on, "sqs-modes", false, "run only the SQS modes comparison (issue #21) and write its section of -out")
	fs.IntVar(&o.sqsModes.events, "sqs-modes-events", 2000, "events per run of the SQS modes comparison")
	fs.IntVar(&o.sqsModes.runs, "sqs-modes-runs", 3, "runs per cell of the SQS modes comparison")
	smDelays := fs.String("sqs-modes-delays", "0,20ms", "provider answer delays of the SQS modes comparison")
	fs.DurationVar(&o.sqsModes.relayPoll, "sqs-modes-relay-poll", 0, "PollInterval of ackgap's outbox relay in the SQS modes comparison; 0: the relay's default, outbox.PollIntervalDefault (direct dispatch carries the rows out; the poll finds those whose hold lapsed)")
	smOnly := fs.String("sqs-modes-only", "", "comma-separated modes of the SQS modes comparison to run (default all: "+strings.Join(smModes, ", ")+"); targets whose modes did not run read 0")
	soakFlags(fs, &o.soak)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	for _, d := range split(*kmDelays) {
		v, err := time.ParseDuration(d)
		if d == "0" {
			v, err = 0, nil
		}
		if err != nil || v < 0 {
			errs = append(errs, fmt.Errorf("-kafka-modes-delays: %q is not a duration >= 0", d))
		}
		o.kafkaModes.delays = append(o.kafkaModes.delays, v)
	}
	o.kafkaModes.modes = kmModes
	if *kmOnly != "" {
		o.kafkaModes.modes = nil
		for _, m := range split(*kmOnly) {
			if !slices.Contains(kmModes, m) {
				errs = append(errs, fmt.Errorf("-kafka-modes-only: unknown mode %q (want %s)", m, strings.Join(kmModes, ", ")))
			}
			o.kafkaModes.modes = append(o.kafkaModes.modes, m)
		}
	}
	if !slices.Contains(kmStores, o.kafkaModes.store) {
		errs = append(errs, fmt.Errorf("-kafka-modes-store: unknown store %q (want %s)", o.kafkaModes.store, strings.Join(kmStores, ", ")))
	}
	if o.kafkaModes.events < 1 || o.kafkaModes.runs < 1 {
		errs = append(errs, fmt.Errorf("-kafka-modes-events and -kafka-modes-runs must be positive"))
	}
	for _, d := range split(*smDelays) {
		v, err := time.ParseDuration(d)
		if d == "0" {
			v, err = 0, nil
		}
		if err != nil || v < 0 {
			errs = append(errs, fmt.Errorf("-sqs-modes-delays: %q is not a duration >= 0", d))
		}
		o.sqsModes.delays = append(o.sqsModes.delays, v)
	}
	o.sqsModes.modes = smModes
	if *smOnly != "" {
		o.sqsModes.modes = nil
		for _, m := range strings.Split(*smOnly, ",") {
			m = strings.TrimSpace(m)
			if !slices.Contains(smModes, m) {
				errs = append(errs, fmt.Errorf("-sqs-modes-only: unknown mode %q (want %s)", m, strings.Join(smModes, ", ")))
			}
			o.sqsModes.modes = append(o.sqsModes.modes, m)
		}
	}
	if o.sqsModes.events < 1 || o.sqsModes.runs < 1 {
		errs = append(errs, fmt.Errorf("-sqs-modes-events and -sqs-modes-runs must be positive"))
	}
	if o.sqsModes.on && (o.kafkaModes.on || o.soak.duration > 0) {
		errs = append(errs, errors.New("-sqs-modes, -kafka-modes and -soak are runs of their own: give one of them"))
	}
	if err := o.soak.validate(); err != nil {
		errs = append(errs, err)
	}
	if o.kafkaModes.on && o.soak.duration > 0 {
		errs = append(errs, errors.New("-kafka-modes and -soak are runs of their own: give one of them"))
	}
	for _, s := range split(*storesFlag) {
		if !slices.Contains(allStores, s) {
			errs = append(errs, fmt.Errorf("-stores: unknown store %q (want %s)", s, strings.Join(allStores, ", ")))
		}
		o.stores = append(o.stores, s)
	}
	for _, w := range split(*workloadsFlag) {
		if !slices.Contains(dbKinds, kind(w)) {
			errs = append(errs, fmt.Errorf("-workloads: unknown workload %q (want %s)", w, joinKinds(dbKinds)))
		}
		o.workloads = append(o.workloads, kind(w))
	}
	for _, c := range split(*concFlag) {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > 256 {
			errs = append(errs, fmt.Errorf("-concurrency: %q is not in [1, 256]", c))
		}
		o.concurrency = append(o.concurrency, n)
	}
	for _, r := range split(*dupFlag) {
		f, err := strconv.ParseFloat(r, 64)
		if err != nil || f < 0 || f >= 1 {
			errs = append(errs, fmt.Errorf("-dup-rates: %q is not in [0, 1)", r))
		}
		o.dupRates = append(o.dupRates, f)
	}
	errs = append(errs, checkE2E(o.stores)...)
	if o.dupConc < 1 || o.dupConc > 256 {
		errs = append(errs, fmt.Errorf("-dup-concurrency %d is not in [1, 256]", o.dupConc))
	}
	if o.duration <= 0 {
		errs = append(errs, fmt.Errorf("-duration %s must be positive", o.duration))
	}
	if o.messages < 1 {
		errs = append(errs, fmt.Errorf("-messages %d must be positive", o.messages))
	}
	if o.runs < 1 {
		errs = append(errs, fmt.Errorf("-runs %d must be positive", o.runs))
	}
	if o.out != "" {
		if _, err := os.Stat(filepath.Dir(o.out)); err != nil {
			errs = append(errs, fmt.Errorf("-out %s: %w (run from the repository root, or set -out)", o.out, err))
		}
	}
	return o, errors.Join(errs...)
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func joinKinds(ks []kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

// bench opens the stores, builds the cells, runs them (every cell once,
// then every cell again, so that slow drifts of the machine hit every
// workload alike) and returns the report.
func bench(ctx context.Context, o *options, progress io.Writer) (*report, error) {
	started := time.Now()
	maxConc := max(slices.Max(o.concurrency), o.dupConc)
	var backends []backend
	defer func() {
		for _, b := range backends {
			if err := b.close(); err != nil {
				fmt.Fprintln(progress, "benchmarks: cleanup:", err)
			}
		}
	}()
	for _, s := range o.stores {
		var b backend
		var err error
		switch s {
		case "postgres":
			b, err = openPostgres(ctx, o.dsn, int32(maxConc+4))
		case "sqlite":
			b, err = openSQLite(ctx)
		case "mariadb":
			b, err = openMariaDB(ctx, o.mariaDSN, maxConc+4)
		}
		if err != nil {
			return nil, err
		}
		backends = append(backends, b)
	}
	rep := &report{opts: o, backends: backends}
	var err error
	if rep.facts, err = machineFacts(ctx, backends); err != nil {
		return nil, err
	}
	plans := map[float64]*plan{}
	planFor := func(rate float64) *plan {
		if plans[rate] == nil {
			plans[rate] = newPlan(o.messages, rate, uint64(len(plans)+1))
		}
		return plans[rate]
	}
	add := func(b backend, k kind, c int, rate float64) *cell {
		for _, x := range rep.cells {
			if x.be == b && x.kind == k && x.concurrency == c && x.dupRate == rate {
				return x
			}
		}
		x := &cell{be: b, kind: k, concurrency: c, dupRate: rate, plan: planFor(rate)}
		rep.cells = append(rep.cells, x)
		return x
	}
	for _, b := range backends {
		for _, c := range o.concurrency {
			for _, k := range o.workloads {
				if k == kindSafeAdd && b.name() != "postgres" {
					continue // QueueOutbox inserts at once on SQLite and MariaDB: the same as safe
				}
				add(b, k, c, 0)
			}
		}
	}
	for _, b := range backends {
		for _, k := range o.workloads {
			if k == kindSafeAdd {
				continue
			}
			for _, rate := range o.dupRates {
				add(b, k, o.dupConc, rate)
			}
		}
	}
	if o.overhead {
		add(nil, kindWatermill, 1, 0)
		add(nil, kindDedup, 1, 0)
		for _, b := range backends {
			add(b, kindInbox, 1, 0)
		}
	}
	// Warm up: one short run of each workload on each store at its
	// highest concurrency, not recorded, so that every connection has
	// prepared its statements and the code paths are hot.
	warm := map[string]*cell{}
	var order []string
	for _, c := range rep.cells {
		key := c.String()[:strings.LastIndex(c.String(), "/c")]
		if w, ok := warm[key]; !ok || c.concurrency > w.concurrency {
			if !ok {
				order = append(order, key)
			}
			warm[key] = c
		}
	}
	for _, key := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := runOnce(ctx, warm[key], min(o.duration/4, 250*time.Millisecond)); err != nil {
			return nil, fmt.Errorf("%s warm-up: %w", warm[key], err)
		}
	}
	fmt.Fprintf(progress, "[warm-up done %.1fs]\n", time.Since(started).Seconds())
	total := len(rep.cells) * o.runs
	done := 0
	for run := range o.runs {
		for _, c := range rep.cells {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			res, err := runOnce(ctx, c, o.duration)
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", c, run+1, err)
			}
			c.results = append(c.results, res)
			done++
			ok, why := res.correct(c.kind)
			mark := "ok"
			if !ok {
				mark = "NOT CORRECT: " + why
			}
			fmt.Fprintf(progress, "[%3d/%d %5.1fs] %-40s %8.0f msg/s  %s\n", done, total, time.Since(started).Seconds(), c, res.rate(), mark)
		}
	}
	if err := runE2E(ctx, rep, progress, started); err != nil {
		return nil, err
	}
	rep.elapsed = time.Since(started)
	return rep, nil
}

// runKafkaModesCmd runs the Kafka ordering modes comparison alone, prints
// its section and splices it into -out (replacing the section of an
// earlier run, keeping the rest of the file).
func runKafkaModesCmd(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	o.kafkaModes.dsn = o.dsn
	o.kafkaModes.mariaDSN = o.mariaDSN
	o.kafkaModes.brokers = o.e2e.kafkaBrokers
	section, err := runKafkaModes(ctx, o.kafkaModes, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "benchmarks:", err)
		return 1
	}
	fmt.Fprint(stdout, section)
	if o.out != "" {
		doc, err := os.ReadFile(o.out)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(stderr, "benchmarks:", err)
			return 1
		}
		begin, end := o.kafkaModes.markers()
		if err := os.WriteFile(o.out, []byte(spliceBetween(string(doc), section, begin, end)), 0o644); err != nil {
			fmt.Fprintln(stderr, "benchmarks:", err)
			return 1
		}
		fmt.Fprintln(stderr, "benchmarks: wrote the Kafka modes section of", o.out)
	}
	if !strings.Contains(section, "| yes |") || strings.Contains(section, "| NO |") {
		fmt.Fprintln(stderr, "benchmarks: some runs were not correct: see the correct column")
		return 1
	}
	return 0
}

// runSQSModesCmd runs the SQS modes comparison alone, prints its section
// and splices it into -out (replacing the section of an earlier run,
// keeping the rest of the file).
func runSQSModesCmd(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	o.sqsModes.dsn = o.dsn
	o.sqsModes.endpoint = o.e2e.sqsEndpoint
	section, err := runSQSModes(ctx, o.sqsModes, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "benchmarks:", err)
		return 1
	}
	fmt.Fprint(stdout, section)
	if o.out != "" {
		doc, err := os.ReadFile(o.out)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(stderr, "benchmarks:", err)
			return 1
		}
		if err := os.WriteFile(o.out, []byte(spliceBetween(string(doc), section, smBegin, smEnd)), 0o644); err != nil {
			fmt.Fprintln(stderr, "benchmarks:", err)
			return 1
		}
		fmt.Fprintln(stderr, "benchmarks: wrote the SQS modes section of", o.out)
	}
	if !strings.Contains(section, "| yes |") || strings.Contains(section, "| NO |") {
		fmt.Fprintln(stderr, "benchmarks: some runs were not correct: see the correct column")
		return 1
	}
	return 0
}
