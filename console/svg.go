package console

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Geometry of a histogram picture, in SVG user units.
const (
	chartW, chartH = 960.0, 200.0
	chartTop       = 16.0
	chartBottom    = 40.0 // room for the bucket labels
)

// bar is one bucket as drawn.
type bar struct {
	X, Y, W, H float64
	LabelX     float64
	Label      string // the bucket's upper bound
	Count      uint64 // the bucket's count, written above the bar when not 0
	CountY     float64
	Title      string // tooltip: range and count
	Negative   bool
}

// chart is a histogram ready for the svg template.
type chart struct {
	Title        string
	W, H         float64
	BaseY        float64
	Bars         []bar
	Count        uint64
	Mean         string
	P50, P99     string // the upper bound of the bucket holding the quantile: "≤25ms"
	Negative     uint64
	NegativePct  string
	HasNegatives bool // the instrument is signed (lease headroom)
	// Most is the fullest bucket's count, the y axis's top tick at TopY
	// (bars are scaled to it; 0 draws no tick).
	Most uint64
	TopY float64
}

// newChart lays out h's buckets as equal-width bars, heights scaled to
// the fullest bucket. signed marks buckets ending at or below 0 as
// negative.
func newChart(title string, h *histogram, signed bool) *chart {
	c := &chart{Title: title, W: chartW, H: chartH + chartBottom, BaseY: chartH, HasNegatives: signed}
	if h == nil {
		return c
	}
	c.Count = h.Count
	if h.Count > 0 {
		c.Mean = fmtSeconds(h.Sum / float64(h.Count))
		c.P50, c.P99 = h.quantileBound(0.5), h.quantileBound(0.99)
	}
	if signed {
		c.Negative = h.negative()
		if h.Count > 0 {
			c.NegativePct = strconv.FormatFloat(100*float64(c.Negative)/float64(h.Count), 'f', 1, 64) + "%"
		}
	}
	var most uint64
	for _, n := range h.Counts {
		most = max(most, n)
	}
	c.Most, c.TopY = most, chartTop
	n := len(h.Counts)
	w := chartW / float64(n)
	for i, cnt := range h.Counts {
		b := bar{X: float64(i)*w + 1, W: w - 2, LabelX: float64(i)*w + w/2}
		if most > 0 {
			b.H = math.Round((chartH-chartTop)*float64(cnt)/float64(most)*10) / 10
		}
		b.Y = chartH - b.H
		b.Count, b.CountY = cnt, b.Y-3
		lo, hi := "-∞", "+∞"
		if i > 0 {
			lo = fmtSeconds(h.Bounds[i-1])
		}
		if i < len(h.Bounds) {
			hi = fmtSeconds(h.Bounds[i])
			b.Label = "≤" + hi
			b.Negative = signed && h.Bounds[i] <= 0
		} else {
			b.Label = ">" + lo
		}
		b.Title = fmt.Sprintf("(%s, %s]: %d", lo, hi, cnt)
		c.Bars = append(c.Bars, b)
	}
	return c
}

// fmtSeconds formats seconds as a short duration: 500µs, 2.5ms, 1s, 5m,
// -1m, 12h.
func fmtSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	neg := d < 0
	if neg {
		d = -d
	}
	var out string
	switch {
	case d == 0:
		out = "0"
	case d < time.Millisecond:
		out = trimFloat(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second:
		out = trimFloat(float64(d)/float64(time.Millisecond)) + "ms"
	case d < time.Minute:
		out = trimFloat(d.Seconds()) + "s"
	case d < time.Hour:
		out = trimFloat(d.Minutes()) + "m"
	default:
		out = trimFloat(d.Hours()) + "h"
	}
	if neg {
		out = "-" + out
	}
	return out
}

func trimFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// quantileBound returns the bucket that holds the q quantile, as its
// upper bound ("≤25ms", or ">5m" for the last bucket): buckets give the
// quantile to within a bucket, no closer.
func (h *histogram) quantileBound(q float64) string {
	var sum uint64
	for i, n := range h.Counts {
		sum += n
		if float64(sum) >= q*float64(h.Count) && sum > 0 {
			if i < len(h.Bounds) {
				return "≤" + fmtSeconds(h.Bounds[i])
			}
			return ">" + fmtSeconds(h.Bounds[len(h.Bounds)-1])
		}
	}
	return ""
}
