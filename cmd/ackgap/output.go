package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns: header first, then one row per call of
// row, flushed by flush.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// fmtTime prints t in UTC to the second, or "-" when zero.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// fmtAge prints how long before now t was, rounded to the second, or "-"
// when t is zero.
func fmtAge(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String()
}

// clip shortens s to n runes, marking the cut with "…", and flattens it to
// one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// progress draws a bar of done/total on w (stderr), redrawn in place with
// a carriage return; total 0 shows the count alone.
type progress struct {
	w     io.Writer
	verb  string
	total int64
	done  int64
	drawn bool
}

const progressWidth = 30

func (p *progress) add(n int64) {
	p.done += n
	p.drawn = true
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%s %d rows", p.verb, p.done)
		return
	}
	filled := int(min(p.done, p.total) * progressWidth / p.total)
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d rows %s", strings.Repeat("#", filled), strings.Repeat(".", progressWidth-filled), p.done, p.total, p.verb)
}

// finish ends the bar's line; calling it again does nothing.
func (p *progress) finish() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
