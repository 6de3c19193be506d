package billingsim

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/retention"
)

// Summary is what one run did, counted by the demo (published, deliveries,
// injected duplicates), by the inbox (outcomes, through
// router.Config.Observer), read back from the database (orders, outbox)
// and timed by the routers' spans (ack gap, lease headroom).
type Summary struct {
	// Store is "sqlite" or "postgres"; Location the file or schema.
	Store, Location string
	// Broker is the broker's name (BrokerGoChannel, ...); BrokerLocation
	// its topics or queues; TopologyLabel and Topology the row naming the
	// partitions or instances; Producer who published the events ("" for
	// the demo's own on GoChannel).
	Broker, BrokerLocation, TopologyLabel, Topology, Producer string
	// Events is the number of orders and of distinct events; Partitions the
	// number of partitions (or of router instances, on SQS).
	Events, Partitions int
	// Instances is the number of router instances started, a replacement
	// included.
	Instances int
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

	// CrashRestart is true when a router instance was to crash in the ack
	// gap (Options.CrashRestart); InstanceCrashes is how many did (0 or 1).
	CrashRestart    bool
	InstanceCrashes int
	// CrashEventID is the event whose delivery the crashed instance
	// committed and never acked; CrashRedelivered how many duplicates of
	// it the inbox skipped (the broker's redelivery), the first
	// CrashRedeliveredAfter the crash.
	CrashEventID          string
	CrashRedelivered      int
	CrashRedeliveredAfter time.Duration
	// CrashedInstance and ReplacementInstance number the instances;
	// CrashGaveUp is how long closing the crashed one took.
	CrashedInstance, ReplacementInstance int
	CrashGaveUp                          time.Duration
	// CrashEffect says what the broker did with the unacked message.
	CrashEffect string

	// Applied, Duplicates, Failed and Rejected count the inbox outcomes
	// (ackgap.Outcome*), one per pass through the inbox, retries
	// included.
	Applied, Duplicates, Failed, Rejected int
	// AppliedCommitUnknown counts events applied by a pass whose commit
	// failed with an unknown outcome (ackgap.ErrCommitUnknown: under load,
	// a COMMIT the database ran after the handler's context ran out), as
	// a later pass showed by finding the inbox row: no pass reported them
	// applied. Applied + AppliedCommitUnknown = Events in a correct run.
	AppliedCommitUnknown int
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

	// InboxRetention is the inbox retention of the demo's pruner
	// (retention.Config.Retention); InboxPruneRounds the rounds it ran,
	// InboxPruneBusy those of them the store was too busy for (an error
	// wrapping ackgap.ErrStoreUnavailable: SQLite's SQLITE_BUSY under the
	// routers' and relays' writes; the pruner tries again next round) and
	// InboxPruned the inbox rows they deleted (none in a fresh demo: no
	// row is older than the retention).
	InboxRetention   time.Duration
	InboxPruneRounds int
	InboxPruneBusy   int
	InboxPruned      int64

	// Relays is the number of outbox relays.
	Relays int
	// RelaysWoken is true when the store woke the relays after each commit
	// (PostgreSQL LISTEN/NOTIFY), false when they polled (SQLite).
	RelaysWoken bool
	// RelaysDuring is true when the relays ran while the consumer did
	// (Options.RelaysDuring).
	RelaysDuring bool
	// OutboxDone and OutboxDead count the outbox rows by final state, read
	// back from the database.
	OutboxDone, OutboxDead int
	// Drained is the time from the routers' close (the relays' start,
	// unless RelaysDuring) to the last outbox row carried out.
	Drained time.Duration
	// Republished counts rows done at an attempt after the first (a lost
	// reply, a failed call, a failed record).
	Republished int
	// DeadErrors holds the first dead rows' errors.
	DeadErrors []string
	// LostReplies is how many charge replies the demo dropped after the
	// provider charged; PlannedLostReplies how many -lost-replies selected.
	LostReplies, PlannedLostReplies int
	// RelayCrashCut is how many effects the killed relay had called and
	// left unrecorded; PlannedRelayCrash how many Options.RelayCrash asked
	// for (capped at the outbox rows; 0 with RelaysDuring).
	RelayCrashCut, PlannedRelayCrash int
	// RelayCrashCharges is how many of RelayCrashCut were charges.
	RelayCrashCharges int
	// ChargesAttempted counts the HTTP calls to the payment provider;
	// ChargesMade the distinct idempotency keys it charged; ChargeReplays
	// the calls it answered with the original charge; ChargeConflicts the
	// calls it refused (422) because a key came with another body.
	ChargesAttempted, ChargesMade, ChargeReplays, ChargeConflicts int
	// ReceiptCalls counts the HTTP calls to the mailer; ReceiptsSent the
	// receipts it sent (one per key).
	ReceiptCalls, ReceiptsSent int

	// Timings are the ack gap and lease headroom of the deliveries, from
	// the routers' OpenTelemetry spans (package telemetry). Check does
	// not look at them: they describe the run, they are no guarantee.
	Timings Timings
}

// Injected returns the number of duplicate deliveries injected: one per
// sequential, crash-before-ack and concurrent event, and one per instance
// crash.
func (s *Summary) Injected() int {
	return s.InjectedSequential + s.InjectedCrash + s.InjectedConcurrent + s.InstanceCrashes
}

// MessagesPerSecond returns the deliveries processed per second of Elapsed.
func (s *Summary) MessagesPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Deliveries) / s.Elapsed.Seconds()
}

// RowsPerSecond returns the outbox rows carried out per second of Drained.
func (s *Summary) RowsPerSecond() float64 {
	if s.Drained <= 0 {
		return 0
	}
	return float64(s.OutboxDone+s.OutboxDead) / s.Drained.Seconds()
}

// Check returns every way the run broke the guarantees, or nil: each order
// moved exactly once, two outbox rows per order, each event applied once,
// each injected duplicate skipped, nothing dead-lettered; every outbox row
// done, each order charged exactly once (charges made = orders, whatever
// the attempts) and sent exactly one receipt.
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
	if s.Applied+s.AppliedCommitUnknown != s.Events || s.AppliedTwice > 0 {
		fail("the inbox applied %d times (and %d times with an unknown commit outcome) for %d events (%d events more than once)",
			s.Applied, s.AppliedCommitUnknown, s.Events, s.AppliedTwice)
	}
	if s.Duplicates < s.Injected() {
		fail("the inbox skipped %d duplicates, %d were injected", s.Duplicates, s.Injected())
	}
	if s.CrashesDone != s.InjectedCrash {
		fail("%d crashes after commit were simulated, %d planned", s.CrashesDone, s.InjectedCrash)
	}
	if s.CrashRestart && s.InstanceCrashes != 1 {
		fail("%d router instances crashed in the ack gap, 1 planned", s.InstanceCrashes)
	}
	if s.InstanceCrashes > 0 && s.CrashRedelivered < 1 {
		fail("the delivery of %s that the crashed instance committed was not redelivered and skipped as a duplicate", s.CrashEventID)
	}
	if s.Deliveries < int64(s.Published+s.InjectedCrash+s.InstanceCrashes) {
		fail("%d deliveries, want at least %d published + %d redelivered after a crash + %d after an instance crash",
			s.Deliveries, s.Published, s.InjectedCrash, s.InstanceCrashes)
	}
	if s.DeadLettered > 0 {
		fail("%d messages dead-lettered %v", s.DeadLettered, s.DeadLetterReasons)
	}
	if s.UnknownEvents > 0 {
		fail("%d deliveries of events never published", s.UnknownEvents)
	}
	if s.OutboxDone != 2*s.Events || s.OutboxDead > 0 {
		fail("%d outbox rows done and %d dead, want all %d done %v", s.OutboxDone, s.OutboxDead, 2*s.Events, s.DeadErrors)
	}
	if s.RelayCrashCut != s.PlannedRelayCrash {
		fail("the killed relay left %d effects unrecorded, %d planned", s.RelayCrashCut, s.PlannedRelayCrash)
	}
	if s.ChargesMade != s.Events {
		fail("%d charges made, want one per order: %d", s.ChargesMade, s.Events)
	}
	if s.ChargeConflicts > 0 {
		fail("the provider refused %d charges whose idempotency key came with another body", s.ChargeConflicts)
	}
	if s.LostReplies != s.PlannedLostReplies || s.ChargeReplays < s.LostReplies {
		fail("%d charge replies lost (%d planned), %d answered from the provider's stored result", s.LostReplies, s.PlannedLostReplies, s.ChargeReplays)
	}
	if s.ChargesAttempted < s.ChargesMade+s.LostReplies {
		fail("%d charge calls, want at least %d charges + %d retries after a lost reply", s.ChargesAttempted, s.ChargesMade, s.LostReplies)
	}
	if s.ReceiptsSent != s.Events {
		fail("%d receipts sent, want one per order: %d", s.ReceiptsSent, s.Events)
	}
	return errors.Join(errs...)
}

// Print writes the summary as a two-column table.
func (s *Summary) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("store", "%s (%s)", s.Store, s.Location)
	if s.Broker != "" {
		row("broker", "%s (%s)", s.Broker, s.BrokerLocation)
	}
	if s.Topology != "" {
		row(s.TopologyLabel, "%s", s.Topology)
	} else {
		row("partitions", "%d (one router instance each, consumer %q)", s.Partitions, orders.Consumer)
	}
	if s.Producer != "" {
		row("producer", "%s", s.Producer)
	}
	row("events", "%d", s.Events)
	row("published", "%d (each event once + %d sequential + %d concurrent copies)", s.Published, s.InjectedSequential, s.InjectedConcurrent)
	deliveries := fmt.Sprintf("%d (published + %d redelivered after a crash before the ack", s.Deliveries, s.CrashesDone)
	if s.CrashRestart {
		deliveries += fmt.Sprintf(" + %d after an instance crash", s.InstanceCrashes)
	}
	if more := s.Deliveries - int64(s.Published+s.CrashesDone+s.InstanceCrashes); more != 0 {
		deliveries += fmt.Sprintf(" + %d more from the broker", more)
	}
	row("deliveries", "%s)", deliveries)
	injected := fmt.Sprintf("%d: sequential %d, crash-before-ack %d, concurrent %d (%d overlapped in flight)",
		s.Injected(), s.InjectedSequential, s.InjectedCrash, s.InjectedConcurrent, s.ConcurrentRaced)
	if s.CrashRestart {
		injected += fmt.Sprintf(", instance crash %d", s.InstanceCrashes)
	}
	row("duplicates injected", "%s", injected)
	row("duplicates skipped", "%d", s.Duplicates)
	row("inbox outcomes", "applied %d, duplicate %d, failed %d, rejected %d", s.Applied, s.Duplicates, s.Failed, s.Rejected)
	if s.AppliedCommitUnknown > 0 {
		row("commit outcome unknown", "%d events applied by a pass whose commit failed (reported failed; a later pass found them applied)", s.AppliedCommitUnknown)
	}
	row("dead-lettered", "%d%s", s.DeadLettered, reasons(s.DeadLetterReasons))
	row("orders moved", "%d of %d (status charging, version 1); moved twice %d; not moved %d",
		s.OrdersMoved, s.Events, s.OrdersMovedTwice, s.OrdersNotMoved)
	row("outbox rows", "%d (%d orders without exactly charge + email.receipt)", s.OutboxRows, s.OutboxBadOrders)
	if s.CrashRestart {
		if s.InstanceCrashes == 0 {
			row("instance crash", "planned, but no instance crashed")
		} else {
			row("instance crash", "in-process (not SIGKILL): instance %d committed %s and stopped before its ack; closed, and replaced by instance %d",
				s.CrashedInstance, s.CrashEventID, s.ReplacementInstance)
			copies := ""
			if s.CrashRedelivered > 1 {
				copies = fmt.Sprintf(" (%d copies)", s.CrashRedelivered)
			}
			row("after the crash", "its subscriber gave the message up unacked after %s: %s, %s after the crash; the inbox skipped it as a duplicate%s",
				s.CrashGaveUp.Round(time.Millisecond), s.CrashEffect, s.CrashRedeliveredAfter.Round(time.Millisecond), copies)
		}
	}
	row("elapsed", "%s", s.Elapsed.Round(time.Millisecond))
	row("throughput", "%.0f messages/s", s.MessagesPerSecond())
	for _, r := range s.Timings.rows() {
		row(r[0], "%s", r[1])
	}
	busy := ""
	if s.InboxPruneBusy > 0 {
		busy = fmt.Sprintf(" (%d met a busy store, tried again next round)", s.InboxPruneBusy)
	}
	row("inbox retention", "retention.New(...).Run beside the relays: rows older than %g days pruned every %s; rounds %d%s, rows deleted %d",
		s.InboxRetention.Hours()/24, retention.IntervalDefault, s.InboxPruneRounds, busy, s.InboxPruned)
	wake := fmt.Sprintf("polling every %s", RelayPollInterval)
	if s.RelaysWoken {
		wake = fmt.Sprintf("woken by LISTEN/NOTIFY, polling every %s as a fallback", RelayPollInterval)
	}
	when := "started once the consumer finished"
	if s.RelaysDuring {
		when = "ran with the consumer"
	}
	row("relays", "%d (%s; concurrency %d each, %s)", s.Relays, when, RelayConcurrency, wake)
	drained := fmt.Sprintf("drained in %s (%.0f rows/s)", s.Drained.Round(time.Millisecond), s.RowsPerSecond())
	if s.RelaysDuring {
		drained = fmt.Sprintf("drained %s after the consumer finished", s.Drained.Round(time.Millisecond))
	}
	row("outbox carried out", "done %d, dead %d, carried out again %d; %s", s.OutboxDone, s.OutboxDead, s.Republished, drained)
	if s.PlannedRelayCrash > 0 {
		row("relay crash", "1 relay killed mid-effect after calling out for %d rows (%d charges); carried out again after its %s lease",
			s.RelayCrashCut, s.RelayCrashCharges, CrashRelayLease)
	}
	row("charges attempted", "%d HTTP calls (%d replies lost after the charge, retried with the same key)", s.ChargesAttempted, s.LostReplies)
	row("charges made", "%d (distinct idempotency keys charged; %d calls answered with the original charge, %d refused)",
		s.ChargesMade, s.ChargeReplays, s.ChargeConflicts)
	row("receipts sent", "%d (%d HTTP calls)", s.ReceiptsSent, s.ReceiptCalls)
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
