package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/ackgap/ackgap/stores"
)

// statusView is the JSON output of "status".
type statusView struct {
	Now           time.Time           `json:"now"`
	WindowSeconds float64             `json:"window_seconds"`
	Inbox         []inboxStatsView    `json:"inbox"`
	Outbox        []outboxStatsView   `json:"outbox"`
	OutboxTotals  map[string]int64    `json:"outbox_totals"`
	OldestDueAt   *time.Time          `json:"oldest_due_at,omitempty"`
	OldestDueAge  *float64            `json:"oldest_due_age_seconds"` // null when no row is due
	Migrations    *migrationStatusSum `json:"migrations"`
	// Held, HeldUntil and Backoff are stores.StatsResult's: pending rows
	// never tried and not due yet (held for direct dispatch, or delayed),
	// when the first of them is due, and pending rows waiting out a retry
	// backoff.
	Held      int64      `json:"held"`
	HeldUntil *time.Time `json:"held_until,omitempty"`
	Backoff   int64      `json:"backoff"`
	// Kafka is the consumer group's offsets, with --kafka-brokers.
	Kafka *kafkaStatusView `json:"kafka,omitempty"`
}

// kafkaOnlyStatusView is the JSON output of "status" with --kafka-brokers
// and no database.
type kafkaOnlyStatusView struct {
	Now   time.Time        `json:"now"`
	Kafka *kafkaStatusView `json:"kafka"`
}

type inboxStatsView struct {
	Consumer  string    `json:"consumer"`
	Rows      int64     `json:"rows"`
	Oldest    time.Time `json:"oldest"`
	Newest    time.Time `json:"newest"`
	Recent    int64     `json:"recent"`
	PerMinute float64   `json:"per_minute"`
}

type outboxStatsView struct {
	Kind            string    `json:"kind"`
	State           string    `json:"state"`
	Rows            int64     `json:"rows"`
	OldestCreatedAt time.Time `json:"oldest_created_at"`
	Held            int64     `json:"held"`
	Backoff         int64     `json:"backoff"`
}

type migrationStatusSum struct {
	Version int `json:"version"`
	Latest  int `json:"latest"`
}

func (a *app) statusCommand() *cobra.Command {
	var window time.Duration
	var kt kafkaTarget
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Inbox rows per consumer, outbox rows by kind and state, the oldest due row, held and dead rows; a Kafka group's offsets",
		Long: `Show, per consumer, the inbox row count, the oldest and newest row and the
rows per minute over --window (or since the consumer's oldest row when that
is shorter, at least a minute: the console's rule); the outbox by kind and state with each group's
oldest row; of the pending rows, how many are due, held and waiting out a
retry backoff; how long the oldest due row has waited (how far the relays are
behind); dead rows waiting for a redrive; and the schema version.

A held row is pending, never tried and not due yet: written held for direct
dispatch (middleware.InboxConfig.Dispatch), the relay of the process that
wrote it carries it out at once; if that process died, any relay claims it
once its hold ends (the relay's Lease after the commit, 1 minute by default).
A row a handler added with a later AvailableAt counts as held too. A row
waiting out a retry backoff was tried at least once.

It counts every inbox row: on a large inbox run it now and then, not in a loop.

With --kafka-brokers, --kafka-group and --kafka-topic (repeat for several;
the flags of "doctor") it also shows, per partition of the topics, the
group's committed offset, the log end offset, the lag between them, and how
many offsets above the committed one the commit's metadata records finished
(FINISHED): the watermark engine of kafkabroker (Subscriber,
ParallelSubscriber, BatchConsumer) keeps the records it acked above its
committed offset there ("ackgap1:"), and a member that claims the partition
skips them instead of replaying them. "-" where the group has no committed
offset; "?" where the metadata is another client's or stale. Without --dsn
it shows the Kafka part alone. The console's live page shows the same
engine from inside the process (watermark, in flight, buffered, replays
skipped, regressions).

On a schema behind the code (migrations pending) it prints what it can, then
the fix on stderr, and exits 4, as "migrate status" does.`,
		Example: `  ackgap status --dsn sqlite:./app.db
  ackgap status --window 10m --json | jq '.outbox_totals.dead'
  ackgap status --kafka-brokers kafka:9092 --kafka-group billing --kafka-topic orders`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if window <= 0 {
				return usageErrorf("--window is %s, must be positive", window)
			}
			if err := kt.validate(); err != nil {
				return err
			}
			var kv *kafkaStatusView
			if len(kt.kafkaBrokers) > 0 {
				var err error
				if kv, err = kafkaStatus(&kt); err != nil {
					return failed(err)
				}
				if a.dsn == "" {
					if a.json {
						return failed(printJSON(cmd.OutOrStdout(), kafkaOnlyStatusView{Now: a.env.now().UTC(), Kafka: kv}))
					}
					return failed(printKafkaStatus(cmd.OutOrStdout(), kv))
				}
			}
			s, closeFn, err := a.open(cmd.Context(), openMigrated)
			if err != nil {
				return err
			}
			defer closeFn()
			ms, err := s.MigrationStatus(cmd.Context(), &stores.MigrationStatusParams{})
			if err != nil {
				return failed(err)
			}
			// A schema behind the code is a deploy mistake: the counts
			// are shown (when the old tables allow), then the hint, and
			// the exit code of "migrate status" (4).
			var behind error
			if ms.Version < ms.Latest {
				behind = &exitError{code: exitPending, err: fmt.Errorf("schema version %d of %d: %s", ms.Version, ms.Latest, migrateFix)}
			}
			st, err := s.Stats(cmd.Context(), &stores.StatsParams{Window: window, Now: a.env.now()})
			if err != nil {
				if behind != nil {
					return behind
				}
				return failed(err)
			}
			totals := map[string]int64{}
			for _, o := range st.Outbox {
				totals[string(o.State)] += o.Rows
			}
			if a.json {
				v := statusView{Now: st.Now.UTC(), WindowSeconds: window.Seconds(), OutboxTotals: totals,
					Inbox: []inboxStatsView{}, Outbox: []outboxStatsView{},
					Migrations: &migrationStatusSum{Version: ms.Version, Latest: ms.Latest}}
				for _, c := range st.Inbox {
					v.Inbox = append(v.Inbox, inboxStatsView{c.Consumer, c.Rows, c.Oldest.UTC(), c.Newest.UTC(), c.Recent, c.PerMinute(c.RateWindow(window, st.Now))})
				}
				for _, o := range st.Outbox {
					v.Outbox = append(v.Outbox, outboxStatsView{o.Kind, string(o.State), o.Rows, o.OldestCreatedAt.UTC(), o.Held, o.Backoff})
				}
				v.Held, v.Backoff, v.Kafka = st.Held, st.Backoff, kv
				if !st.HeldUntil.IsZero() {
					at := st.HeldUntil.UTC()
					v.HeldUntil = &at
				}
				if !st.OldestDueAt.IsZero() {
					at := st.OldestDueAt.UTC()
					v.OldestDueAt = &at
					age := st.Now.Sub(at).Seconds()
					v.OldestDueAge = &age
				}
				if err := printJSON(cmd.OutOrStdout(), v); err != nil {
					return failed(err)
				}
				return behind
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "schema version %d of %d\n\nINBOX (rows per minute over the last %s, or since the consumer's oldest row when that is shorter)\n", ms.Version, ms.Latest, window)
			if len(st.Inbox) == 0 {
				fmt.Fprintln(w, "no inbox rows")
			} else {
				t := newTable(w, "CONSUMER", "ROWS", "OLDEST", "NEWEST", "PER_MIN")
				for _, c := range st.Inbox {
					t.row(c.Consumer, strconv.FormatInt(c.Rows, 10), fmtTime(c.Oldest), fmtTime(c.Newest),
						strconv.FormatFloat(c.PerMinute(c.RateWindow(window, st.Now)), 'f', 2, 64))
				}
				if err := t.flush(); err != nil {
					return failed(err)
				}
			}
			fmt.Fprintln(w, "\nOUTBOX")
			if len(st.Outbox) == 0 {
				fmt.Fprintln(w, "no outbox rows")
			} else {
				t := newTable(w, "KIND", "STATE", "ROWS", "OLDEST_AGE")
				for _, o := range st.Outbox {
					t.row(o.Kind, string(o.State), strconv.FormatInt(o.Rows, 10), fmtAge(st.Now, o.OldestCreatedAt))
				}
				if err := t.flush(); err != nil {
					return failed(err)
				}
			}
			fmt.Fprintf(w, "\npending %d, claimed %d, done %d, dead %d\n",
				totals["pending"], totals["claimed"], totals["done"], totals["dead"])
			if totals["pending"] > 0 {
				fmt.Fprintf(w, "of the pending: %d due, %d held, %d waiting out a retry backoff\n",
					totals["pending"]-st.Held-st.Backoff, st.Held, st.Backoff)
			}
			if st.Held > 0 {
				fmt.Fprintf(w, "held for dispatch (or delayed): %d, the first held until %s (in %s)\n",
					st.Held, fmtTime(st.HeldUntil), fmtAge(st.HeldUntil, st.Now))
			}
			switch {
			case !st.OldestDueAt.IsZero():
				fmt.Fprintf(w, "oldest due row: due %s ago\n", fmtAge(st.Now, st.OldestDueAt))
			case st.Held > 0:
				fmt.Fprintf(w, "oldest due row: none yet (held rows become due from %s: if the process holding them died, any relay claims them then)\n",
					fmtTime(st.HeldUntil))
			default:
				fmt.Fprintln(w, "oldest due row: none (the relays are caught up)")
			}
			if totals["dead"] > 0 {
				fmt.Fprintf(w, "%d dead row(s): see \"ackgap outbox list --state dead\", then \"ackgap outbox redrive\"\n", totals["dead"])
			}
			if kv != nil {
				fmt.Fprintln(w)
				if err := printKafkaStatus(w, kv); err != nil {
					return failed(err)
				}
			}
			return behind
		},
	}
	cmd.Flags().DurationVar(&window, "window", stores.StatsWindowDefault, "how far back inbox rows count for rows per minute")
	kt.addFlags(cmd.Flags())
	return cmd
}
