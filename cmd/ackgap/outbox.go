package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ackgap/ackgap/stores"
)

// outboxRowView is one outbox row in JSON output. Payload is set only when
// asked for (outbox show --payload). Held is stores.OutboxRow.Held at the
// command's clock: a pending row never tried and not due yet.
type outboxRowView struct {
	ID             int64             `json:"id"`
	Kind           string            `json:"kind"`
	IdempotencyKey string            `json:"idempotency_key"`
	State          string            `json:"state"`
	Held           bool              `json:"held,omitempty"`
	Attempts       int               `json:"attempts"`
	LastError      string            `json:"last_error,omitempty"`
	Consumer       string            `json:"consumer,omitempty"`
	EventID        string            `json:"event_id,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	AvailableAt    time.Time         `json:"available_at"`
	PayloadBytes   int               `json:"payload_bytes"`
	Headers        map[string]string `json:"headers,omitempty"`
	Payload        *string           `json:"payload,omitempty"`
}

func rowView(r stores.OutboxRow, payload bool, now time.Time) outboxRowView {
	v := outboxRowView{ID: r.ID, Kind: r.Kind, IdempotencyKey: r.IdempotencyKey, State: string(r.State), Held: r.Held(now),
		Attempts: r.Attempts, LastError: r.LastError, Consumer: r.Consumer, EventID: r.EventID,
		CreatedAt: r.CreatedAt().UTC(), AvailableAt: r.AvailableAt.UTC(), PayloadBytes: len(r.Payload), Headers: r.Headers}
	if payload {
		p := string(r.Payload)
		v.Payload = &p
	}
	return v
}

// stateText is the state a table shows: "pending (held)" for a held row.
func (v *outboxRowView) stateText() string {
	if v.Held {
		return v.State + " (held)"
	}
	return v.State
}

// stateHeld is the --state of "outbox list" that selects held rows
// (stores.FindOutboxParams.Held), a part of the pending ones.
const stateHeld = "held"

// filter holds the outbox filter flags shared by list, redrive and prune.
type filter struct {
	states    []string
	kind      string
	olderThan time.Duration
	keyPrefix string
}

func (f *filter) register(fs *pflag.FlagSet, withState bool, stateHelp string) {
	if withState {
		fs.StringSliceVar(&f.states, "state", nil, stateHelp)
	}
	fs.StringVar(&f.kind, "kind", "", "only rows of this kind")
	fs.DurationVar(&f.olderThan, "older-than", 0, "only rows created longer ago than this (e.g. 30m, 72h)")
	fs.StringVar(&f.keyPrefix, "key-prefix", "", "only rows whose idempotency key starts with this")
}

// params returns the store filter at now, or a usage error.
func (f *filter) params(now time.Time) (stores.FindOutboxParams, error) {
	p := stores.FindOutboxParams{Kind: f.kind, KeyPrefix: f.keyPrefix}
	if f.olderThan < 0 {
		return p, usageErrorf("--older-than is %s, must not be negative", f.olderThan)
	}
	if err := p.Validate(); err != nil {
		return p, usageErrorf("%w", err)
	}
	if f.olderThan > 0 {
		p.CreatedBefore = now.Add(-f.olderThan)
	}
	for _, s := range f.states {
		if s == stateHeld {
			if len(f.states) > 1 {
				return p, usageErrorf("--state held is a part of the pending rows: give it alone")
			}
			p.Held, p.Now = true, now
			continue
		}
		st := stores.OutboxState(s)
		if !st.Valid() {
			return p, usageErrorf("--state %q: must be pending, claimed, done, dead or held", s)
		}
		p.States = append(p.States, st)
	}
	return p, nil
}

func (a *app) outboxCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "outbox",
		Short: "List, show, redrive and prune outbox rows",
		Example: `  ackgap outbox list --state dead
  ackgap outbox show 1042
  ackgap outbox redrive --dry-run
  ackgap outbox prune --older-than 168h`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.outboxListCommand(), a.outboxShowCommand(), a.outboxRedriveCommand(), a.outboxPruneCommand())
	return cmd
}

func (a *app) outboxListCommand() *cobra.Command {
	var f filter
	var limit int
	var afterID int64
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List outbox rows by state, kind, age and idempotency key prefix",
		Long: `List outbox rows, oldest id first, at most --limit of them. To page, pass the
last id printed as --after-id. Payloads are not printed (see "outbox show").

--state held lists the pending rows never tried and not due yet (shown as
"pending (held)"): rows written held for direct dispatch, which the relay of
the process that wrote them carries out at once, and which any relay claims
once their hold ends (available_at) if that process died; and rows a handler
added with a later AvailableAt. Pending rows with attempts of 1 or more and a
later available_at wait out a retry backoff.`,
		Example: `  ackgap outbox list --state dead
  ackgap outbox list --state held --kind charge
  ackgap outbox list --kind charge --older-than 1h --key-prefix charge:order- --limit 50
  ackgap outbox list --state pending,claimed --json | jq '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.params(a.env.now())
			if err != nil {
				return err
			}
			if limit < 1 || limit > stores.FindOutboxLimitMax {
				return usageErrorf("--limit is %d, must be in [1, %d]", limit, stores.FindOutboxLimitMax)
			}
			p.Limit, p.AfterID = limit, afterID
			s, closeFn, err := a.open(cmd.Context(), openMigrated)
			if err != nil {
				return err
			}
			defer closeFn()
			res, err := s.FindOutbox(cmd.Context(), &p)
			if err != nil {
				return failed(err)
			}
			views := make([]outboxRowView, 0, len(res.Rows))
			for _, r := range res.Rows {
				views = append(views, rowView(r, false, a.env.now()))
			}
			if a.json {
				return failed(printJSON(cmd.OutOrStdout(), views))
			}
			a.printRows(cmd.OutOrStdout(), views, a.env.now())
			if len(views) == limit {
				fmt.Fprintf(cmd.OutOrStdout(), "more rows may follow: --after-id %d\n", views[len(views)-1].ID)
			}
			return nil
		},
	}
	f.register(cmd.Flags(), true, "only rows in these states: pending, claimed, done, dead (comma-separated), or held alone (pending, never tried, not due yet)")
	cmd.Flags().IntVar(&limit, "limit", stores.FindOutboxLimitDefault, "most rows to print")
	cmd.Flags().Int64Var(&afterID, "after-id", 0, "only rows with a higher id (the last id of the previous page)")
	return cmd
}

func (a *app) outboxShowCommand() *cobra.Command {
	var payload bool
	cmd := &cobra.Command{
		Use:   "show <id>",
		Short: "Show one outbox row: state, attempts, last error, headers (and payload with --payload)",
		Example: `  ackgap outbox show 1042
  ackgap outbox show 1042 --payload --json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("show takes one outbox row id, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return usageErrorf("outbox row id %q is not a positive integer", args[0])
			}
			s, closeFn, err := a.open(cmd.Context(), openMigrated)
			if err != nil {
				return err
			}
			defer closeFn()
			res, err := s.FindOutbox(cmd.Context(), &stores.FindOutboxParams{IDs: []int64{id}, Limit: 1})
			if err != nil {
				return failed(err)
			}
			if len(res.Rows) == 0 {
				return &exitError{code: exitNotFound, err: fmt.Errorf("no outbox row %d", id)}
			}
			v := rowView(res.Rows[0], payload, a.env.now())
			if a.json {
				return failed(printJSON(cmd.OutOrStdout(), v))
			}
			w := cmd.OutOrStdout()
			t := newTable(w, "FIELD", "VALUE")
			t.row("id", strconv.FormatInt(v.ID, 10))
			t.row("kind", v.Kind)
			t.row("idempotency_key", v.IdempotencyKey)
			t.row("state", v.stateText())
			t.row("attempts", strconv.Itoa(v.Attempts))
			t.row("last_error", orDash(clip(v.LastError, 200)))
			t.row("consumer", orDash(v.Consumer))
			t.row("event_id", orDash(v.EventID))
			t.row("created_at", fmtTime(v.CreatedAt))
			t.row("available_at", fmtTime(v.AvailableAt))
			t.row("payload_bytes", strconv.Itoa(v.PayloadBytes))
			for _, k := range sortedKeys(v.Headers) {
				t.row("header "+k, clip(v.Headers[k], 200))
			}
			if err := t.flush(); err != nil {
				return failed(err)
			}
			if v.Payload != nil {
				fmt.Fprintf(w, "\n%s\n", *v.Payload)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&payload, "payload", false, "print the payload too (it may hold personal data)")
	return cmd
}

func (a *app) outboxRedriveCommand() *cobra.Command {
	var f filter
	var batch, limit int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "redrive",
		Short: "Move dead rows matching the filters back to pending, in bounded batches",
		Long: `Move dead outbox rows that match the filters back to pending, due now, with
their attempts reset, --batch rows per statement, with a progress bar on
stderr. Each batch is guarded by the rows' state: a row no longer dead is left
alone, so running it twice changes nothing the second time. The relay carries
a redriven row out with its same payload and idempotency key: fix what made it
fail first. --dry-run counts the rows that would be redriven and lists the
first --limit of them.`,
		Example: `  ackgap outbox redrive --dry-run
  ackgap outbox redrive --kind charge --key-prefix charge:order- --older-than 10m
  ackgap outbox redrive --batch 200 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.params(a.env.now())
			if err != nil {
				return err
			}
			p.States = []stores.OutboxState{stores.OutboxDead}
			return a.bulk(cmd, p, batch, limit, dryRun, "redriven", func(ctx context.Context, s stores.Operator, ids []int64) (int64, error) {
				res, err := s.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{IDs: ids, Limit: len(ids)})
				if err != nil {
					return 0, err
				}
				return res.Redriven, nil
			})
		},
	}
	f.register(cmd.Flags(), false, "")
	cmd.Flags().IntVar(&batch, "batch", 500, "rows per statement (1 to 1000)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the rows that would be redriven, change nothing")
	cmd.Flags().IntVar(&limit, "limit", dryRunSampleDefault, "with --dry-run, most rows to list (the count covers them all)")
	return cmd
}

func (a *app) outboxPruneCommand() *cobra.Command {
	var f filter
	var batch, limit int
	var dryRun bool
	var state string
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Delete done (or, with --state dead, dead) rows older than --older-than",
		Long: `Delete outbox rows in --state (done by default, or dead) created longer ago
than --older-than (required), matching the other filters, --batch rows per
statement. Pending and claimed rows are never deleted: they are effects not yet
carried out. Each DELETE is guarded by the rows' state, so running it twice
changes nothing the second time. --dry-run counts the rows that would go and
lists the first --limit of them.`,
		Example: `  ackgap outbox prune --older-than 168h
  ackgap outbox prune --state dead --kind email --older-than 720h --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("older-than") {
				return usageErrorf("prune needs --older-than (e.g. 168h; 0s for every row)")
			}
			st := stores.OutboxState(state)
			if st != stores.OutboxDone && st != stores.OutboxDead {
				return usageErrorf("--state %q: prune deletes done or dead rows only", state)
			}
			p, err := f.params(a.env.now())
			if err != nil {
				return err
			}
			p.States = []stores.OutboxState{st}
			return a.bulk(cmd, p, batch, limit, dryRun, "deleted", func(ctx context.Context, s stores.Operator, ids []int64) (int64, error) {
				res, err := s.DeleteOutboxIfState(ctx, &stores.DeleteOutboxParams{IDs: ids, States: []stores.OutboxState{st}})
				if err != nil {
					return 0, err
				}
				return res.Deleted, nil
			})
		},
	}
	f.register(cmd.Flags(), false, "")
	cmd.Flags().StringVar(&state, "state", string(stores.OutboxDone), "done or dead")
	cmd.Flags().IntVar(&batch, "batch", 500, "rows per statement (1 to 1000)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the rows that would be deleted, change nothing")
	cmd.Flags().IntVar(&limit, "limit", dryRunSampleDefault, "with --dry-run, most rows to list (the count covers them all)")
	return cmd
}

// dryRunSampleDefault is how many rows a dry run of redrive or prune lists
// by default: a sample to check the filters by, not the whole set.
const dryRunSampleDefault = 20

// bulkView is the JSON output of redrive and prune.
type bulkView struct {
	DryRun  bool  `json:"dry_run"`
	Matched int64 `json:"matched"` // every matching row
	// Rows are, with --dry-run, the first --limit matching rows.
	Changed int64           `json:"changed"`
	Rows    []outboxRowView `json:"rows,omitempty"`
}

// bulk pages through the rows matching p, batch at a time by id, and
// calls apply on each page's ids (unless dryRun). apply's writes are
// guarded by state, so a row that changed meanwhile is skipped; the
// cursor only moves forward, so a row is never visited twice.
func (a *app) bulk(cmd *cobra.Command, p stores.FindOutboxParams, batch, limit int, dryRun bool, verb string,
	apply func(ctx context.Context, s stores.Operator, ids []int64) (int64, error)) error {
	if batch < 1 || batch > 1000 {
		return usageErrorf("--batch is %d, must be in [1, 1000]", batch)
	}
	if limit < 0 {
		return usageErrorf("--limit is %d, must be 0 or more", limit)
	}
	ctx := cmd.Context()
	s, closeFn, err := a.open(ctx, openMigrated)
	if err != nil {
		return err
	}
	defer closeFn()
	out := bulkView{DryRun: dryRun}
	bar := &progress{w: cmd.ErrOrStderr(), verb: verb, total: a.bulkTotal(ctx, s, p)}
	if dryRun {
		bar.verb = "matched"
	}
	defer bar.finish()
	p.Limit = batch
	for {
		res, err := s.FindOutbox(ctx, &p)
		if err != nil {
			return failed(err)
		}
		if len(res.Rows) == 0 {
			break
		}
		ids := make([]int64, len(res.Rows))
		for i, r := range res.Rows {
			ids[i] = r.ID
		}
		out.Matched += int64(len(ids))
		if dryRun {
			for _, r := range res.Rows {
				if len(out.Rows) < limit { // a sample: the count covers every row
					out.Rows = append(out.Rows, rowView(r, false, a.env.now()))
				}
			}
			bar.add(int64(len(ids)))
		} else {
			n, err := apply(ctx, s, ids)
			if err != nil {
				return failed(fmt.Errorf("after %d row(s) %s: %w", out.Changed, verb, err))
			}
			out.Changed += n
			bar.add(n)
		}
		p.AfterID = ids[len(ids)-1]
		if len(res.Rows) < batch {
			break
		}
	}
	bar.finish()
	if a.json {
		return failed(printJSON(cmd.OutOrStdout(), out))
	}
	w := cmd.OutOrStdout()
	if dryRun {
		if limit > 0 {
			a.printRows(w, out.Rows, a.env.now())
		}
		if len(out.Rows) > 0 && int64(len(out.Rows)) < out.Matched {
			fmt.Fprintf(w, "dry run: %d row(s) would be %s (the first %d shown; --limit shows more)\n", out.Matched, verb, len(out.Rows))
			return nil
		}
		fmt.Fprintf(w, "dry run: %d row(s) would be %s\n", out.Matched, verb)
		return nil
	}
	fmt.Fprintf(w, "%d row(s) %s (%d matched)\n", out.Changed, verb, out.Matched)
	return nil
}

// bulkTotal returns the number of rows the progress bar counts to: the
// store's count of dead rows (of p's kind), read from the outbox's partial
// index, when p selects dead rows with no other filter; else 0 (the bar
// then shows a count alone).
func (a *app) bulkTotal(ctx context.Context, s stores.Operator, p stores.FindOutboxParams) int64 {
	if len(p.States) != 1 || p.States[0] != stores.OutboxDead || p.KeyPrefix != "" || !p.CreatedBefore.IsZero() {
		return 0
	}
	st, err := s.OutboxStats(ctx, &stores.OutboxStatsParams{Kind: p.Kind})
	if err != nil {
		return 0
	}
	return st.Dead
}

// printRows prints outbox rows as a table, or a line saying there are none.
func (a *app) printRows(w io.Writer, rows []outboxRowView, now time.Time) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no outbox rows")
		return
	}
	t := newTable(w, "ID", "KIND", "STATE", "ATTEMPTS", "AGE", "IDEMPOTENCY_KEY", "EVENT_ID", "LAST_ERROR")
	for _, r := range rows {
		t.row(strconv.FormatInt(r.ID, 10), r.Kind, r.stateText(), strconv.Itoa(r.Attempts), fmtAge(now, r.CreatedAt),
			r.IdempotencyKey, orDash(r.EventID), orDash(clip(r.LastError, 60)))
	}
	_ = t.flush()
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
