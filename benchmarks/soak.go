package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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
}

// soakSection starts the soak's section in the -out file.
const soakSection = "## Soak"

func soakFlags(fs *flag.FlagSet, o *soakOptions) {
	fs.DurationVar(&o.duration, "soak", 0, "run the soak for this long instead of the benchmarks (e.g. 10m): consumer and relay processes on PostgreSQL and -soak-broker, SIGKILLed and restarted, resources at start and end, invariants at the end")
	fs.StringVar(&o.broker, "soak-broker", billingsim.BrokerKafka, "broker of the soak: kafka (-kafka-brokers) or sqs (-sqs-endpoint)")
	fs.IntVar(&o.consumers, "soak-consumers", billingsim.SoakConsumersDefault, "consumer processes of the soak; the first is never killed")
	fs.IntVar(&o.relays, "soak-relays", billingsim.SoakRelaysDefault, "outbox relay processes of the soak; the first is never killed")
	fs.DurationVar(&o.killEvery, "soak-kill-every", billingsim.SoakKillEveryDefault, "time between two SIGKILLs of a consumer or a relay (restarted at once)")
	fs.IntVar(&o.rate, "soak-rate", billingsim.SoakRateDefault, "events published per second during the soak")
}

// runSoak runs the soak o describes, prints its report to stdout and, with
// -out, puts it in that file's soak section. It returns the exit code: 1
// when the soak could not run or broke an invariant.
func runSoak(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	rep, err := billingsim.Soak(ctx, billingsim.SoakConfig{
		Duration: o.soak.duration, Broker: o.soak.broker, KafkaBrokers: o.e2e.kafkaBrokers, SQSEndpoint: o.e2e.sqsEndpoint,
		DSN: o.dsn, Consumers: o.soak.consumers, Relays: o.soak.relays, KillEvery: o.soak.killEvery, Rate: o.soak.rate,
		Log: stderr,
	})
	if err != nil {
		fmt.Fprintln(stderr, "benchmarks: soak:", err)
		return 1
	}
	text := soakSection + "\n\n" + rep.Markdown()
	fmt.Fprint(stdout, text)
	if o.out != "" {
		if err := writeSection(o.out, text); err != nil {
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
// -kafka-modes) and the soak (written by -soak).
func writeKeepingSections(path, text string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	doc := string(old)
	text = strings.TrimRight(text, "\n") + "\n"
	for _, m := range [][2]string{{kmBegin, kmEnd}, {kmMariaBegin, kmMariaEnd}} {
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
// and ends (the next "## " heading or Kafka modes section, or the end of
// doc); ok is false when doc has none.
func soakBounds(doc string) (start, end int, ok bool) {
	start = strings.Index("\n"+doc, "\n"+soakSection+"\n")
	if start < 0 {
		return 0, 0, false
	}
	rest := doc[start+len(soakSection):]
	end = len(doc)
	for _, next := range []string{"\n## ", "\n" + kmBegin} {
		if j := strings.Index(rest, next); j >= 0 {
			end = min(end, start+len(soakSection)+j+1)
		}
	}
	return start, end, true
}
