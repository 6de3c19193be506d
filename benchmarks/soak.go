package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ackgap/ackgap/examples/billing/billingsim"
)

// soakOptions are the flags of the soak (-soak and -soak-*).
type soakOptions struct {
	duration  time.Duration
	broker    string
	consumers int
	relays    int
	killEvery time.Duration
	rate      int
	// store is -soak-store: billingsim.SoakStorePostgres (-dsn) or
	// billingsim.SoakStoreMariaDB (-mariadb-dsn).
	store string
}

// soakSection starts the soak's section in the -out file (PostgreSQL).
const soakSection = "## Soak"

// Markers of the MariaDB soak's section (-soak-store mariadb): a run
// replaces what is between them and leaves the rest of the file, the
// PostgreSQL soak's section included, alone.
const (
	soakMariaBegin = "<!-- soak mariadb: begin (go run ./benchmarks -soak 5m -soak-store mariadb) -->"
	soakMariaEnd   = "<!-- soak mariadb: end -->"
)

// soakStores are the values of -soak-store.
var soakStores = []string{billingsim.SoakStorePostgres, billingsim.SoakStoreMariaDB}

func soakFlags(fs *flag.FlagSet, o *soakOptions) {
	fs.DurationVar(&o.duration, "soak", 0, "run the soak for this long instead of the benchmarks (e.g. 10m): consumer and relay processes on -soak-store and -soak-broker, SIGKILLed and restarted, resources at start and end, invariants at the end")
	fs.StringVar(&o.broker, "soak-broker", billingsim.BrokerKafka, "broker of the soak: kafka (-kafka-brokers) or sqs (-sqs-endpoint)")
	fs.IntVar(&o.consumers, "soak-consumers", billingsim.SoakConsumersDefault, "consumer processes of the soak; the first is never killed")
	fs.IntVar(&o.relays, "soak-relays", billingsim.SoakRelaysDefault, "outbox relay processes of the soak; the first is never killed")
	fs.DurationVar(&o.killEvery, "soak-kill-every", billingsim.SoakKillEveryDefault, "time between two SIGKILLs of a consumer or a relay (restarted at once)")
	fs.IntVar(&o.rate, "soak-rate", billingsim.SoakRateDefault, "events published per second during the soak")
	fs.StringVar(&o.store, "soak-store", billingsim.SoakStorePostgres, "database of the soak: postgres (-dsn, a schema of its own; section \"## Soak\" of -out) or mariadb (-mariadb-dsn, a database of its own; a section of -out of its own)")
}

// validate returns the errors of o's flags.
func (o *soakOptions) validate() error {
	if !slices.Contains(soakStores, o.store) {
		return fmt.Errorf("-soak-store: unknown store %q (want %s)", o.store, strings.Join(soakStores, ", "))
	}
	return nil
}

// dsn returns the DSN of o's store.
func (o *soakOptions) dsn(opts *options) string {
	if o.store == billingsim.SoakStoreMariaDB {
		return opts.mariaDSN
	}
	return opts.dsn
}

// runSoak runs the soak o describes, prints its report to stdout and, with
// -out, puts it in that file's soak section (PostgreSQL) or between the
// MariaDB soak's markers. It returns the exit code: 1 when the soak could
// not run or broke an invariant.
func runSoak(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	load := sampleLoad(10 * time.Second)
	rep, err := billingsim.Soak(ctx, billingsim.SoakConfig{
		Duration: o.soak.duration, Broker: o.soak.broker, KafkaBrokers: o.e2e.kafkaBrokers, SQSEndpoint: o.e2e.sqsEndpoint,
		DSN: o.soak.dsn(o), Consumers: o.soak.consumers, Relays: o.soak.relays, KillEvery: o.soak.killEvery, Rate: o.soak.rate,
		Log: stderr,
	})
	loadLine := load()
	if err != nil {
		fmt.Fprintln(stderr, "benchmarks: soak:", err)
		return 1
	}
	text := soakSection + "\n\n" + rep.Markdown()
	write := func(path string) error { return writeSection(path, text) }
	if o.soak.store == billingsim.SoakStoreMariaDB {
		text = soakMariaBegin + "\n\n## Soak on MariaDB (issue #23)\n\n" + rep.Markdown() + "\n" + loadLine + "\n\n" + soakMariaEnd + "\n"
		write = func(path string) error {
			doc, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			return os.WriteFile(path, []byte(spliceBetween(string(doc), text, soakMariaBegin, soakMariaEnd)), 0o644)
		}
	}
	fmt.Fprint(stdout, text)
	if o.out != "" {
		if err := write(o.out); err != nil {
			fmt.Fprintln(stderr, "benchmarks:", err)
			return 1
		}
		fmt.Fprintln(stderr, "benchmarks: wrote the soak section of", o.out)
	}
	if err := rep.Check(); err != nil {
		fmt.Fprintln(stderr, "benchmarks: soak broke an invariant:", err)
		return 1
	}
	return 0
}

// sampleLoad reads the machine's 1-minute load average now and every
// period until the returned func is called, which stops the sampling and
// returns a sentence for the report: the CPUs, the load at the start and
// the end, and the lowest and highest reading between.
func sampleLoad(period time.Duration) func() string {
	first := loadAverage()
	var mu sync.Mutex
	lo, hi := first, first
	note := func(v string) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if l, err := strconv.ParseFloat(lo, 64); err != nil || f < l {
			lo = v
		}
		if h, err := strconv.ParseFloat(hi, 64); err != nil || f > h {
			hi = v
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				note(loadAverage())
			case <-stop:
				return
			}
		}
	}()
	return func() string {
		close(stop)
		<-done
		last := loadAverage()
		note(last)
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("Machine: %d CPUs shared with other work; load average (1 min) %s at the start, %s at the end, %s–%s during the run (read every %s): the rates are from a loaded machine, the resource figures and invariants are what this section is for.",
			runtime.NumCPU(), first, last, lo, hi, period)
	}
}

// writeSection replaces the soak section of the markdown file path (from
// its "## Soak" line to the next "## " heading) with text, or appends text
// when the file has none; a missing file is created.
func writeSection(path, text string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	doc := string(old)
	start, end, ok := soakBounds(doc)
	switch {
	case ok && end < len(doc):
		doc = doc[:start] + text + "\n" + doc[end:]
	case ok:
		doc = doc[:start] + text
	case doc != "":
		doc = strings.TrimRight(doc, "\n") + "\n\n" + text
	default:
		doc = text
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

// writeKeepingSections writes the benchmarks' report text to path,
// keeping the sections of the file that other commands write, after text
// in this order: the Kafka ordering modes (kmBegin to kmEnd, written by
// -kafka-modes, and its MariaDB section), the MariaDB soak (written by
// -soak -soak-store mariadb) and the soak (written by -soak).
func writeKeepingSections(path, text string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	doc := string(old)
	text = strings.TrimRight(text, "\n") + "\n"
	for _, m := range [][2]string{{kmBegin, kmEnd}, {kmMariaBegin, kmMariaEnd}, {soakMariaBegin, soakMariaEnd}} {
		if i, j := strings.Index(doc, m[0]), strings.Index(doc, m[1]); i >= 0 && j > i {
			text += "\n" + doc[i:j+len(m[1])] + "\n"
		}
	}
	if start, end, ok := soakBounds(doc); ok {
		text += "\n" + strings.TrimRight(doc[start:end], "\n") + "\n"
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// soakBounds returns where doc's soak section starts (its "## Soak" line)
// and ends (the next "## " heading or "<!-- " marker of another section,
// such as the Kafka modes', or the end of doc); ok is false when doc has
// none.
func soakBounds(doc string) (start, end int, ok bool) {
	start = strings.Index("\n"+doc, "\n"+soakSection+"\n")
	if start < 0 {
		return 0, 0, false
	}
	rest := doc[start+len(soakSection):]
	end = len(doc)
	for _, next := range []string{"\n## ", "\n<!-- "} {
		if j := strings.Index(rest, next); j >= 0 {
			end = min(end, start+len(soakSection)+j+1)
		}
	}
	return start, end, true
}
