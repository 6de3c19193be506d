package main

import (
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// eventView is the JSON output of "event".
type eventView struct {
	EventID string          `json:"event_id"`
	Applied []appliedView   `json:"applied"`
	Outbox  []outboxRowView `json:"outbox"`
}

type appliedView struct {
	Consumer      string    `json:"consumer"`
	AppliedAt     time.Time `json:"applied_at"`
	PayloadSHA256 string    `json:"payload_sha256,omitempty"`
	TraceParent   string    `json:"trace_parent,omitempty"`
	TraceID       string    `json:"trace_id,omitempty"`
	TraceURL      string    `json:"trace_url,omitempty"`
}

func (a *app) eventCommand() *cobra.Command {
	var consumer, traceURL string
	cmd := &cobra.Command{
		Use:   "event <event-id>",
		Short: "Which consumers applied an event and when, its payload hash, trace, and outbox rows",
		Long: `Look an event id up: which consumers applied it (their inbox rows) and when,
the SHA-256 of the payload that was applied, the trace of the delivery that
applied it, and the outbox rows it wrote. Exit code 3 when nothing is found:
never applied, its inbox rows were pruned, or it was dead-lettered (a
dead-lettered message is rolled back, so it leaves no row: look for its event
id in the dead-letter topic or queue, router.Config.DeadLetterTopic).

--trace-url (env ACKGAP_TRACE_URL) turns the trace id into a link: "{trace_id}"
in it is replaced, e.g. http://jaeger:16686/trace/{trace_id}.`,
		Example: `  ackgap event order-1042
  ackgap event order-1042 --consumer billing --trace-url 'http://jaeger:16686/trace/{trace_id}'`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("event takes one event id, got %d arguments", len(args))
			}
			if args[0] == "" {
				return usageErrorf("the event id is empty")
			}
			// Any length: an inbox may be configured for ids over the default.
			if err := ackgap.CheckEventID(args[0], math.MaxInt); err != nil {
				return usageErrorf("no event can have this id: %w", err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("trace-url") {
				traceURL = a.env.getenv("ACKGAP_TRACE_URL")
			}
			s, closeFn, err := a.open(cmd.Context(), openMigrated)
			if err != nil {
				return err
			}
			defer closeFn()
			res, err := s.LookupEvent(cmd.Context(), &stores.LookupEventParams{EventID: args[0], Consumer: consumer})
			if err != nil {
				return failed(err)
			}
			v := eventView{EventID: args[0], Applied: []appliedView{}, Outbox: []outboxRowView{}}
			for _, r := range res.Inbox {
				av := appliedView{Consumer: r.Consumer, AppliedAt: r.ReceivedAt.UTC(), TraceParent: r.TraceParent}
				if r.PayloadHash != nil {
					av.PayloadSHA256 = hex.EncodeToString(r.PayloadHash)
				}
				if parts := strings.Split(r.TraceParent, "-"); len(parts) == 4 {
					av.TraceID = parts[1]
					if traceURL != "" {
						av.TraceURL = strings.ReplaceAll(traceURL, "{trace_id}", av.TraceID)
					}
				}
				v.Applied = append(v.Applied, av)
			}
			for _, r := range res.Outbox {
				v.Outbox = append(v.Outbox, rowView(r, false, a.env.now()))
			}
			found := len(v.Applied) > 0 || len(v.Outbox) > 0
			if a.json {
				if err := printJSON(cmd.OutOrStdout(), v); err != nil {
					return failed(err)
				}
			} else {
				a.printEvent(cmd, v)
			}
			if !found {
				return &exitError{code: exitNotFound}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&consumer, "consumer", "", "only this consumer's inbox and outbox rows")
	cmd.Flags().StringVar(&traceURL, "trace-url", "", "link template with {trace_id} (env ACKGAP_TRACE_URL)")
	return cmd
}

func (a *app) printEvent(cmd *cobra.Command, v eventView) {
	w := cmd.OutOrStdout()
	if len(v.Applied) == 0 && len(v.Outbox) == 0 {
		fmt.Fprintf(w, "event %s: no inbox or outbox row: never applied, pruned, or dead-lettered "+
			"(a message refused by the handler is rolled back and sits in the dead-letter topic or queue, "+
			"with metadata ackgap_dead_letter_reason; look there for this event id)\n", v.EventID)
		return
	}
	fmt.Fprintf(w, "event %s\n\nAPPLIED BY\n", v.EventID)
	t := newTable(w, "CONSUMER", "APPLIED_AT", "PAYLOAD_SHA256", "TRACE")
	for _, r := range v.Applied {
		trace := r.TraceURL
		if trace == "" {
			trace = r.TraceID
		}
		t.row(r.Consumer, fmtTime(r.AppliedAt), orDash(r.PayloadSHA256), orDash(trace))
	}
	_ = t.flush()
	fmt.Fprintln(w, "\nOUTBOX ROWS")
	a.printRows(w, v.Outbox, a.env.now())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
