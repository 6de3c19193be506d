package console

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// eventIDMax is the longest event id the event page looks up.
const eventIDMax = 1024

// keyPrefixMax is the longest idempotency key prefix the outbox filter
// takes.
const keyPrefixMax = 512

// validText reports whether s is valid UTF-8 without NUL bytes, as every
// text column the console filters on holds (PostgreSQL refuses anything
// else in a query with SQLSTATE 22021).
func validText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// page is what every template gets.
type page struct {
	Title    string
	Nav      string
	Prefix   string
	Writable bool // a token is configured
	Session  bool // the request is logged in
	CSRF     string
	Live     bool // a Recorder is set
	Refresh  int  // seconds; 0: no auto-refresh
	Path     string
	Data     any
}

func (h *Handler) funcs() template.FuncMap {
	return template.FuncMap{
		"age": func(t time.Time) string {
			if t.IsZero() {
				return "–"
			}
			return fmtSeconds(h.cfg.Now().Sub(t).Round(time.Second).Seconds())
		},
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "–"
			}
			return t.UTC().Format("2006-01-02 15:04:05.000Z")
		},
		"perMinute": perMinute,
		// held reports whether a row is held at the console's clock
		// (stores.OutboxRow.Held): pending, never tried, not due yet.
		"held":      func(r stores.OutboxRow) bool { return r.Held(h.cfg.Now()) },
		"traceLink": h.traceLink,
		"seconds":   fmtSeconds,
		"clip": func(s string, n int) string {
			if len(s) <= n {
				return s
			}
			return s[:n] + "…"
		},
		"query": func(kv ...string) template.URL {
			v := url.Values{}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] != "" {
					v.Set(kv[i], kv[i+1])
				}
			}
			return template.URL(v.Encode())
		},
	}
}

// render executes the template name inside the layout.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, code int, name, title, nav string, data any) {
	p := page{Title: title, Nav: nav, Prefix: h.cfg.Prefix, Writable: h.Writable(), Live: h.cfg.Recorder != nil,
		Path: h.returnPath(r), Data: data}
	if s, ok := h.sessionOf(r); ok {
		p.Session, p.CSRF = true, s.csrf
	}
	if nav == "overview" || nav == "live" {
		p.Refresh = int(h.cfg.Refresh.Seconds())
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if err := h.tmpl.ExecuteTemplate(w, name, p); err != nil {
		h.cfg.Logger.Error("console: render", "page", name, "err", err)
	}
}

// returnPath is where a login from this page returns (the "next" of its
// login link): the page itself when it was a GET; for a POST, which a
// redirect after login cannot repeat (the form's URL answers GET with
// 405), the page the form was on: a row's redrive returns to the row,
// the outbox's bulk forms to the outbox, anything else to the overview.
func (h *Handler) returnPath(r *http.Request) string {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return r.URL.RequestURI()
	}
	rest := strings.TrimPrefix(r.URL.Path, h.cfg.Prefix)
	if id, ok := strings.CutSuffix(strings.TrimPrefix(rest, "/outbox/"), "/redrive"); ok && strings.HasPrefix(rest, "/outbox/") && id != "" && !strings.Contains(id, "/") {
		return h.cfg.Prefix + "/outbox/" + url.PathEscape(id)
	}
	if rest == "/outbox/redrive" || rest == "/outbox/prune" {
		return h.cfg.Prefix + "/outbox?state=dead"
	}
	return h.cfg.Prefix + "/"
}

// fail shows an error page with code and a message for the user.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	h.render(w, r, code, "error", http.StatusText(code), "", map[string]any{"Code": code, "Message": msg})
}

// storeFailed shows a store error: a database not set up for the code
// (ackgap.ErrStoreMisconfigured) is 503 saying so; a timeout or an
// unavailable store is 503 "database busy" (try again: the failed
// statement changed nothing); anything else is 500.
// The error's text is logged, not shown.
func (h *Handler) storeFailed(w http.ResponseWriter, r *http.Request, what string, err error) {
	h.cfg.Logger.Error("console: store", "what", what, "err", err)
	if errors.Is(err, ackgap.ErrStoreMisconfigured) {
		h.fail(w, r, http.StatusServiceUnavailable, "The database is not set up for this code ("+what+
			"): run ackgap migrate up, and check the schema and the grants.")
		return
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ackgap.ErrStoreUnavailable) {
		h.fail(w, r, http.StatusServiceUnavailable, "The database is busy or unreachable ("+what+"); try again.")
		return
	}
	h.fail(w, r, http.StatusInternalServerError, "The database refused "+what+"; see the process's log.")
}

// traceLink returns the link of a W3C traceparent's trace in
// Config.TraceURL, or "" when there is no TraceURL or tp is not a
// traceparent.
func (h *Handler) traceLink(tp string) string {
	p, ok := parseTraceParent(tp)
	if h.cfg.TraceURL == "" || !ok {
		return ""
	}
	return strings.ReplaceAll(h.cfg.TraceURL, "{trace_id}", p.TraceID)
}

// perMinute returns the consumer's rows per minute over the stats'
// window, or over the time since its oldest row when that is shorter (a
// consumer that started 10 s ago is not averaged over an hour), at least
// one minute.
func perMinute(c stores.InboxConsumerStats, st *stores.StatsResult) string {
	return strconv.FormatFloat(c.PerMinute(c.RateWindow(st.Window, st.Now)), 'f', 1, 64)
}

// kindRow is one kind's outbox counts on the overview. Held and Backoff
// are parts of Pending (stores.OutboxKindStats).
type kindRow struct {
	Kind                         string
	Pending, Claimed, Done, Dead int64
	Held, Backoff                int64
	OldestOpen                   time.Time // oldest created_at of pending or claimed rows
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	st, err := h.statsCached(r)
	if err != nil {
		h.storeFailed(w, r, "the overview's counts", err)
		return
	}
	var kinds []*kindRow
	byKind := map[string]*kindRow{}
	var totals kindRow
	for _, o := range st.Outbox {
		k := byKind[o.Kind]
		if k == nil {
			k = &kindRow{Kind: o.Kind}
			byKind[o.Kind] = k
			kinds = append(kinds, k)
		}
		for _, row := range []*kindRow{k, &totals} {
			switch o.State {
			case stores.OutboxPending:
				row.Pending += o.Rows
				row.Held += o.Held
				row.Backoff += o.Backoff
			case stores.OutboxClaimed:
				row.Claimed += o.Rows
			case stores.OutboxDone:
				row.Done += o.Rows
			case stores.OutboxDead:
				row.Dead += o.Rows
			}
			if (o.State == stores.OutboxPending || o.State == stores.OutboxClaimed) &&
				(row.OldestOpen.IsZero() || o.OldestCreatedAt.Before(row.OldestOpen)) {
				row.OldestOpen = o.OldestCreatedAt
			}
		}
	}
	type consumerRow struct {
		stores.InboxConsumerStats
		Duplicates, DeadLettered string
	}
	var counts map[string]consumerCounts
	if h.cfg.Recorder != nil {
		ctx, cancel := h.query(r)
		snap, err := h.cfg.Recorder.snapshot(ctx)
		cancel()
		if err != nil {
			h.cfg.Logger.Error("console: recorder", "err", err)
		} else {
			counts = snap.Consumers
		}
	}
	var consumers []consumerRow
	for _, c := range st.Inbox {
		row := consumerRow{InboxConsumerStats: c, Duplicates: "–", DeadLettered: "–"}
		if counts != nil {
			n := counts[c.Consumer]
			row.Duplicates, row.DeadLettered = strconv.FormatUint(n.Duplicates, 10), strconv.FormatUint(n.DeadLettered, 10)
		}
		consumers = append(consumers, row)
	}
	h.render(w, r, http.StatusOK, "overview", "Overview", "overview", map[string]any{
		"Stats": st, "Consumers": consumers, "Kinds": kinds, "Totals": totals, "Counted": counts != nil,
	})
}

// stateHeld is the outbox page's state filter for held rows
// (stores.FindOutboxParams.Held): pending, never tried, not due yet.
const stateHeld = "held"

// outboxFilter is the outbox page's filter, from the query or a form.
type outboxFilter struct {
	State, Kind, Key string
	After            int64
}

func (h *Handler) parseFilter(v url.Values) (outboxFilter, string) {
	f := outboxFilter{State: v.Get("state"), Kind: v.Get("kind"), Key: v.Get("key")}
	if f.State != "" && f.State != stateHeld && !stores.OutboxState(f.State).Valid() {
		return f, "state must be pending, held, claimed, done or dead"
	}
	if len(f.Key) > keyPrefixMax || len(f.Kind) > keyPrefixMax {
		return f, "kind and key prefix must be at most " + strconv.Itoa(keyPrefixMax) + " bytes"
	}
	if !validText(f.Key) || !validText(f.Kind) {
		return f, "kind and key prefix must be UTF-8 text without NUL bytes"
	}
	if a := v.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			return f, "after must be a row id"
		}
		f.After = n
	}
	return f, ""
}

func (h *Handler) outboxList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, bad := h.parseFilter(q)
	if bad != "" {
		h.fail(w, r, http.StatusBadRequest, "Bad filter: "+bad+".")
		return
	}
	p := stores.FindOutboxParams{Kind: f.Kind, KeyPrefix: f.Key, AfterID: f.After, Limit: h.cfg.PageSize + 1}
	switch f.State {
	case "":
	case stateHeld:
		p.Held, p.Now = true, h.cfg.Now()
	default:
		p.States = []stores.OutboxState{stores.OutboxState(f.State)}
	}
	ctx, cancel := h.query(r)
	res, err := h.store.FindOutbox(ctx, &p)
	cancel()
	if err != nil {
		h.storeFailed(w, r, "the outbox rows", err)
		return
	}
	rows, next := res.Rows, int64(0)
	if len(rows) > h.cfg.PageSize {
		rows = rows[:h.cfg.PageSize]
		next = rows[len(rows)-1].ID
	}
	h.render(w, r, http.StatusOK, "outbox", "Outbox", "outbox", map[string]any{
		"Filter": f, "Rows": rows, "Next": next, "PageSize": h.cfg.PageSize, "Redriven": q.Get("redriven"),
		"States": []string{"", "pending", stateHeld, "claimed", "done", "dead"}, "BulkMax": BulkMax,
		"Pruned": q.Get("pruned"), "PruneAges": pruneAges,
		"CanRedrive": f.State == "" || f.State == string(stores.OutboxDead),
	})
}

// traceParent is a parsed W3C traceparent.
type traceParent struct {
	Raw, TraceID, SpanID string
	Sampled              bool
}

func parseTraceParent(s string) (traceParent, bool) {
	parts := strings.Split(s, "-")
	if len(parts) != 4 || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return traceParent{}, false
	}
	return traceParent{Raw: s, TraceID: parts[1], SpanID: parts[2], Sampled: parts[3] == "01"}, true
}

func (h *Handler) outboxRow(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		h.fail(w, r, http.StatusBadRequest, "An outbox row id is a positive integer.")
		return
	}
	ctx, cancel := h.query(r)
	res, err := h.store.FindOutbox(ctx, &stores.FindOutboxParams{IDs: []int64{id}, Limit: 1})
	cancel()
	if err != nil {
		h.storeFailed(w, r, "the outbox row", err)
		return
	}
	if len(res.Rows) == 0 {
		h.fail(w, r, http.StatusNotFound, "No outbox row "+strconv.FormatInt(id, 10)+" (it may have been pruned).")
		return
	}
	row := res.Rows[0]
	tp, hasTP := parseTraceParent(row.Headers[ackgap.TraceParentHeader])
	keys := make([]string, 0, len(row.Headers))
	for k := range row.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	data := map[string]any{"Row": row, "HeaderKeys": keys, "TraceParent": tp, "HasTraceParent": hasTP,
		"PayloadBytes": len(row.Payload), "ShowPayload": h.cfg.ShowPayloads, "Redriven": r.URL.Query().Get("redriven")}
	if h.cfg.ShowPayloads {
		data["Payload"] = string(row.Payload)
	}
	h.render(w, r, http.StatusOK, "row", "Outbox row "+strconv.FormatInt(id, 10), "outbox", data)
}

func (h *Handler) event(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSpace(r.URL.Query().Get("id"))
	data := map[string]any{"ID": id}
	if id == "" {
		h.render(w, r, http.StatusOK, "event", "Event", "event", data)
		return
	}
	if len(id) > eventIDMax {
		h.fail(w, r, http.StatusBadRequest, "An event id is at most "+strconv.Itoa(eventIDMax)+" bytes.")
		return
	}
	if err := ackgap.CheckEventID(id, eventIDMax); err != nil {
		h.fail(w, r, http.StatusBadRequest, "An event id is UTF-8 text without NUL bytes; no event can have this one.")
		return
	}
	ctx, cancel := h.query(r)
	res, err := h.store.LookupEvent(ctx, &stores.LookupEventParams{EventID: id})
	cancel()
	if err != nil {
		h.storeFailed(w, r, "the event lookup", err)
		return
	}
	data["Result"], data["Found"] = res, len(res.Inbox)+len(res.Outbox) > 0
	data["Capped"] = len(res.Outbox) >= stores.LookupEventLimit
	code := http.StatusOK
	if !data["Found"].(bool) {
		code = http.StatusNotFound
	}
	h.render(w, r, code, "event", "Event "+id, "event", data)
}

func (h *Handler) live(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Recorder == nil {
		h.fail(w, r, http.StatusNotFound, "No live measurements: this console does not run in a process with a router (set console.Config.Recorder).")
		return
	}
	ctx, cancel := h.query(r)
	snap, err := h.cfg.Recorder.snapshot(ctx)
	cancel()
	if err != nil {
		h.cfg.Logger.Error("console: recorder", "err", err)
		h.fail(w, r, http.StatusInternalServerError, "Could not read this process's measurements.")
		return
	}
	type brokerCharts struct {
		System, Destination string
		AckGap, Headroom    *chart
	}
	var brokers []brokerCharts
	for _, b := range snap.Brokers {
		brokers = append(brokers, brokerCharts{System: b.System, Destination: b.Destination,
			AckGap:   newChart("Ack gap: commit → broker confirmed", b.AckGap, false),
			Headroom: newChart("Lease headroom: lease deadline − broker confirmed", b.Headroom, true)})
	}
	h.render(w, r, http.StatusOK, "live", "Live", "live", map[string]any{"Brokers": brokers, "Partitions": partitionRows(snap.Partitions)})
}

// partitionRow is one row of the live page's Kafka partition table, its
// numbers formatted ("–" for none).
type partitionRow struct {
	Group, Topic, Partition                  string
	Committed, Watermark, Unconfirmed        string
	InFlight, Buffered, Lag, Skipped, Regres string
	Regressed                                bool
}

// partitionRows formats the Kafka engine's partitions for the live page.
func partitionRows(parts []*partitionLive) []partitionRow {
	num := func(v int64) string {
		if v < 0 {
			return "–"
		}
		return strconv.FormatInt(v, 10)
	}
	rows := make([]partitionRow, 0, len(parts))
	for _, p := range parts {
		unconfirmed := int64(-1)
		if p.Committed >= 0 && p.Watermark >= p.Committed {
			unconfirmed = p.Watermark - p.Committed
		}
		rows = append(rows, partitionRow{Group: p.Group, Topic: p.Topic, Partition: strconv.FormatInt(p.Partition, 10),
			Committed: num(p.Committed), Watermark: num(p.Watermark), Unconfirmed: num(unconfirmed),
			InFlight: num(p.InFlight), Buffered: num(p.Buffered), Lag: num(p.Lag), Skipped: num(p.Skipped), Regres: num(p.Regressions),
			Regressed: p.Regressions > 0})
	}
	return rows
}

// redriveOne moves one dead row back to pending.
func (h *Handler) redriveOne(w http.ResponseWriter, r *http.Request, who string) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		h.fail(w, r, http.StatusBadRequest, "An outbox row id is a positive integer.")
		return
	}
	ctx, cancel := h.query(r)
	res, err := h.store.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{IDs: []int64{id}, Limit: 1})
	cancel()
	if err != nil {
		h.cfg.Logger.Error("console: redrive failed", "who", who, "row", id, "err", err)
		h.storeFailed(w, r, "the redrive", err)
		return
	}
	h.forget()
	h.cfg.Logger.Info("console: redrive", "who", who, "row", id, "redriven", res.Redriven)
	http.Redirect(w, r, h.cfg.Prefix+"/outbox/"+strconv.FormatInt(id, 10)+"?redriven="+strconv.FormatInt(res.Redriven, 10), http.StatusSeeOther)
}

// bulk pages through the rows matching p, bulkBatch at a time by id, at
// most BulkMax, and calls apply on each page's ids; apply's writes are
// guarded by the rows' state, so a row that changed meanwhile is left
// alone. It returns how many rows apply changed.
func (h *Handler) bulk(r *http.Request, p stores.FindOutboxParams, apply func(ctx context.Context, ids []int64) (int64, error)) (int64, error) {
	var changed int64
	for seen := 0; seen < BulkMax; {
		p.Limit = min(bulkBatch, BulkMax-seen)
		ctx, cancel := h.query(r)
		res, err := h.store.FindOutbox(ctx, &p)
		if err == nil && len(res.Rows) > 0 {
			ids := make([]int64, len(res.Rows))
			for i, row := range res.Rows {
				ids[i] = row.ID
			}
			var n int64
			n, err = apply(ctx, ids)
			changed += n
			p.AfterID = ids[len(ids)-1]
		}
		cancel()
		if err != nil {
			return changed, err
		}
		if len(res.Rows) < p.Limit {
			break
		}
		seen += len(res.Rows)
	}
	return changed, nil
}

// filterQuery returns the outbox page's query for f in state, with the
// result of a bulk write.
func filterQuery(f outboxFilter, state, key, value string) string {
	q := url.Values{"state": {state}, key: {value}}
	if f.Kind != "" {
		q.Set("kind", f.Kind)
	}
	if f.Key != "" {
		q.Set("key", f.Key)
	}
	return q.Encode()
}

// redriveFilter moves the dead rows of a filter (kind, key prefix) back to
// pending, at most BulkMax.
func (h *Handler) redriveFilter(w http.ResponseWriter, r *http.Request, who string) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad form.")
		return
	}
	f, bad := h.parseFilter(r.PostForm)
	if bad != "" {
		h.fail(w, r, http.StatusBadRequest, "Bad filter: "+bad+".")
		return
	}
	p := stores.FindOutboxParams{States: []stores.OutboxState{stores.OutboxDead}, Kind: f.Kind, KeyPrefix: f.Key}
	redriven, err := h.bulk(r, p, func(ctx context.Context, ids []int64) (int64, error) {
		res, err := h.store.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{IDs: ids, Limit: len(ids)})
		if err != nil {
			return 0, err
		}
		return res.Redriven, nil
	})
	h.forget()
	if err != nil {
		h.cfg.Logger.Error("console: redrive failed", "who", who, "kind", f.Kind, "key_prefix", f.Key, "redriven", redriven, "err", err)
		h.storeFailed(w, r, "the redrive (after "+strconv.FormatInt(redriven, 10)+" rows)", err)
		return
	}
	h.cfg.Logger.Info("console: redrive", "who", who, "kind", f.Kind, "key_prefix", f.Key, "redriven", redriven)
	http.Redirect(w, r, h.cfg.Prefix+"/outbox?"+filterQuery(f, "dead", "redriven", strconv.FormatInt(redriven, 10)), http.StatusSeeOther)
}

// pruneAges are the ages the prune form offers; the handler takes any
// duration of at least an hour.
var pruneAges = []string{"1h", "24h", "168h", "720h"}

// pruneMinAge is the youngest done row a prune from the console deletes.
const pruneMinAge = time.Hour

// pruneFilter deletes the done rows of a filter (kind, key prefix)
// created more than "older" ago, at most BulkMax. Pending, claimed and
// dead rows are never deleted.
func (h *Handler) pruneFilter(w http.ResponseWriter, r *http.Request, who string) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad form.")
		return
	}
	f, bad := h.parseFilter(r.PostForm)
	if bad != "" {
		h.fail(w, r, http.StatusBadRequest, "Bad filter: "+bad+".")
		return
	}
	older, err := time.ParseDuration(r.PostFormValue("older"))
	if err != nil || older < pruneMinAge {
		h.fail(w, r, http.StatusBadRequest, "Bad age: older must be a duration of at least "+pruneMinAge.String()+" (e.g. 168h).")
		return
	}
	done := []stores.OutboxState{stores.OutboxDone}
	p := stores.FindOutboxParams{States: done, Kind: f.Kind, KeyPrefix: f.Key, CreatedBefore: h.cfg.Now().Add(-older)}
	deleted, err := h.bulk(r, p, func(ctx context.Context, ids []int64) (int64, error) {
		res, err := h.store.DeleteOutboxIfState(ctx, &stores.DeleteOutboxParams{IDs: ids, States: done})
		if err != nil {
			return 0, err
		}
		return res.Deleted, nil
	})
	h.forget()
	if err != nil {
		h.cfg.Logger.Error("console: prune failed", "who", who, "kind", f.Kind, "key_prefix", f.Key, "older", older, "deleted", deleted, "err", err)
		h.storeFailed(w, r, "the prune (after "+strconv.FormatInt(deleted, 10)+" rows)", err)
		return
	}
	h.cfg.Logger.Info("console: prune", "who", who, "kind", f.Kind, "key_prefix", f.Key, "older", older, "deleted", deleted)
	http.Redirect(w, r, h.cfg.Prefix+"/outbox?"+filterQuery(f, "done", "pruned", strconv.FormatInt(deleted, 10)), http.StatusSeeOther)
}
