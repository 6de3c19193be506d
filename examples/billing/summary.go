package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary is what one run did, counted by the demo (published, deliveries,
// injected duplicates), by the inbox (outcomes, through
// router.Config.Observer) and read back from the database (orders, outbox).
type Summary struct {
	// Store is "sqlite" or "postgres"; Location the file or schema.
	Store, Location string
	// Events is the number of orders and of distinct events; Partitions the
	// number of partition topics and router instances.
	Events, Partitions int
	// Published is the number of messages the producer sent: every event
	// once, plus the sequential and the concurrent copies.
	Published int
	// Deliveries is the number of messages the routers received: Published
	// plus one redelivery per simulated crash.
	Deliveries int64

	// InjectedSequential, InjectedCrash and InjectedConcurrent are the
	// duplicates injected of each kind (one per selected event).
	InjectedSequential, InjectedCrash, InjectedConcurrent int
	// CrashesDone is how many first deliveries the fault middleware failed
	// after their commit; it equals InjectedCrash when all went as planned.
	CrashesDone int
	// ConcurrentRaced counts the concurrent pairs whose second copy reached
	// the inbox before the first had committed.
	ConcurrentRaced int

	// Applied, Duplicates, Failed and Rejected count the inbox outcomes
	// (middleware.Outcome*), one per pass through the inbox, retries
	// included.
	Applied, Duplicates, Failed, Rejected int
	// AppliedTwice counts events the inbox applied more than once (must be
	// 0); UnknownEvents reports for event ids never published (must be 0).
	AppliedTwice, UnknownEvents int
	// DeadLettered counts messages on the dead-letter topic, by reason in
	// DeadLetterReasons.
	DeadLettered      int
	DeadLetterReasons map[string]int

	// OrdersMoved counts orders in status charging with version 1;
	// OrdersMovedTwice those with version > 1; OrdersNotMoved the rest.
	OrdersMoved, OrdersMovedTwice, OrdersNotMoved int64
	// OutboxRows is the number of outbox rows; OutboxBadOrders the orders
	// without exactly one charge and one email.receipt row of their own
	// event; OutboxStray rows that belong to no order of the run.
	OutboxRows, OutboxBadOrders, OutboxStray int

	// Elapsed runs from the first publish to the last expected delivery.
	Elapsed time.Duration
}

// Injected returns the number of duplicate deliveries injected.
func (s *Summary) Injected() int {
	return s.InjectedSequential + s.InjectedCrash + s.InjectedConcurrent
}

// MessagesPerSecond returns the deliveries processed per second of Elapsed.
func (s *Summary) MessagesPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Deliveries) / s.Elapsed.Seconds()
}

// Check returns every way the run broke the guarantees, or nil: each order
// moved exactly once, two outbox rows per order, each event applied once,
// each injected duplicate skipped, nothing dead-lettered.
func (s *Summary) Check() error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.OrdersMovedTwice > 0 {
		fail("%d orders moved more than once (version > 1)", s.OrdersMovedTwice)
	}
	if s.OrdersMoved != int64(s.Events) || s.OrdersNotMoved > 0 {
		fail("%d of %d orders moved exactly once, %d not moved", s.OrdersMoved, s.Events, s.OrdersNotMoved)
	}
	if s.OutboxRows != 2*s.Events {
		fail("%d outbox rows, want 2 x %d events = %d", s.OutboxRows, s.Events, 2*s.Events)
	}
	if s.OutboxBadOrders > 0 || s.OutboxStray > 0 {
		fail("%d orders without exactly one charge and one receipt row, %d stray outbox rows", s.OutboxBadOrders, s.OutboxStray)
	}
	if s.Applied != s.Events || s.AppliedTwice > 0 {
		fail("the inbox applied %d times for %d events (%d events more than once)", s.Applied, s.Events, s.AppliedTwice)
	}
	if s.Duplicates < s.Injected() {
		fail("the inbox skipped %d duplicates, %d were injected", s.Duplicates, s.Injected())
	}
	if s.CrashesDone != s.InjectedCrash {
		fail("%d crashes after commit were simulated, %d planned", s.CrashesDone, s.InjectedCrash)
	}
	if s.Deliveries < int64(s.Published+s.InjectedCrash) {
		fail("%d deliveries, want at least %d published + %d redelivered after a crash", s.Deliveries, s.Published, s.InjectedCrash)
	}
	if s.DeadLettered > 0 {
		fail("%d messages dead-lettered %v", s.DeadLettered, s.DeadLetterReasons)
	}
	if s.UnknownEvents > 0 {
		fail("%d deliveries of events never published", s.UnknownEvents)
	}
	return errors.Join(errs...)
}

// Print writes the summary as a two-column table.
func (s *Summary) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("store", "%s (%s)", s.Store, s.Location)
	row("partitions", "%d (one router instance each, consumer %q)", s.Partitions, Consumer)
	row("events", "%d", s.Events)
	row("published", "%d (each event once + %d sequential + %d concurrent copies)", s.Published, s.InjectedSequential, s.InjectedConcurrent)
	row("deliveries", "%d (published + %d redelivered after a crash before the ack)", s.Deliveries, s.CrashesDone)
	row("duplicates injected", "%d: sequential %d, crash-before-ack %d, concurrent %d (%d overlapped in flight)",
		s.Injected(), s.InjectedSequential, s.InjectedCrash, s.InjectedConcurrent, s.ConcurrentRaced)
	row("duplicates skipped", "%d", s.Duplicates)
	row("inbox outcomes", "applied %d, duplicate %d, failed %d, rejected %d", s.Applied, s.Duplicates, s.Failed, s.Rejected)
	row("dead-lettered", "%d%s", s.DeadLettered, reasons(s.DeadLetterReasons))
	row("orders moved", "%d of %d (status charging, version 1); moved twice %d; not moved %d",
		s.OrdersMoved, s.Events, s.OrdersMovedTwice, s.OrdersNotMoved)
	row("outbox rows", "%d (%d orders without exactly charge + email.receipt)", s.OutboxRows, s.OutboxBadOrders)
	row("elapsed", "%s", s.Elapsed.Round(time.Millisecond))
	row("throughput", "%.0f messages/s", s.MessagesPerSecond())
	_ = tw.Flush()
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
