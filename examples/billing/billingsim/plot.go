package billingsim

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// PlotBins is the number of bins of each histogram of -plot.
const PlotBins = 60

// percentileColors mark p50, p90 and p99.
var percentileColors = []color.Color{
	color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff},
	color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff},
	color.RGBA{R: 0x75, G: 0x70, B: 0xb3, A: 0xff},
}

// WritePlot writes to path an SVG with a histogram of the run's ack gaps
// and, when the broker has a lease, one of its lease headrooms, each with
// its p50, p90 and p99 marked. It returns an error when there is no ack
// gap to draw or the file cannot be written.
func WritePlot(path string, s *Summary) (err error) {
	t := &s.Timings
	if t.AckGap.Count() == 0 {
		return errors.New("plot: no ack gap was measured")
	}
	run := fmt.Sprintf("%s + %s, %d events", t.Broker, s.Store, s.Events)
	gap, err := histogram(t.AckGap, "ack gap (commit -> broker confirmed), "+run, true)
	if err != nil {
		return err
	}
	plots := [][]*plot.Plot{{gap}}
	if t.NoLease == "" && t.LeaseHeadroom.Count() > 0 {
		lease, err := histogram(t.LeaseHeadroom, "lease headroom (lease deadline - broker confirmed; < 0: visible again), "+run, false)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{lease})
	}
	c := vgsvg.New(8*vg.Inch, vg.Length(len(plots))*3.5*vg.Inch)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: 6 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, draw.New(c))
	for i, row := range plots {
		row[0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("plot: %w", cerr)
		}
	}()
	if _, err := c.WriteTo(f); err != nil {
		return fmt.Errorf("plot: write %s: %w", path, err)
	}
	return nil
}

// histogram returns a histogram of d (not empty) in ms, with lines at
// p50, p90 and p99, and at 0 when samples are negative. With logX (and
// positive samples) the x axis and the bins are logarithmic, so that a
// long tail stays readable.
func histogram(d Distribution, title string, logX bool) (*plot.Plot, error) {
	lo, hi := d.Min(), d.Max()
	logX = logX && lo > 0
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s\n%d deliveries", title, d.Count())
	p.X.Label.Text = "ms"
	p.X.Tick.Marker = plainTicks
	p.Y.Label.Text = "deliveries"
	p.Y.Tick.Marker = plainTicks
	if logX {
		p.X.Label.Text = "ms (log scale)"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(&plotter.Histogram{Bins: bins(d, logX), FillColor: color.Gray{Y: 0xb0}})
	p.Y.Max *= 1.3 // room for the legend above the bars
	p.Legend.Top = true
	// The legend goes where the bulk is not.
	p.Legend.Left = d.Quantile(0.5) > (lo+hi)/2
	if logX {
		p.Legend.Left = math.Log(d.Quantile(0.5)/lo) > math.Log(hi/lo)/2
	}
	type mark struct {
		name string
		x    float64
		c    color.Color
	}
	marks := []mark{
		{"p50", d.Quantile(0.5), percentileColors[0]},
		{"p90", d.Quantile(0.9), percentileColors[1]},
		{"p99", d.Quantile(0.99), percentileColors[2]},
	}
	if lo < 0 && !logX {
		marks = append(marks, mark{"lease deadline", 0, color.RGBA{R: 0xe0, A: 0xff}})
	}
	for _, m := range marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: 0}, {X: m.x, Y: p.Y.Max}})
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		l.Color = m.c
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s %s ms", m.name, formatMS(m.x)), l)
	}
	p.Legend.Add(fmt.Sprintf("max %s ms", formatMS(hi)))
	return p, nil
}

// plainTicks are gonum's default ticks with labels like 5000 and 2.5
// rather than 5000.00 and 2.50.
var plainTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
	}
	return ticks
})

// bins counts the samples of d (not empty) into PlotBins bins from the
// smallest to the largest, of equal width on a log scale when logX (then
// the samples must be positive), else on a linear one.
func bins(d Distribution, logX bool) []plotter.HistogramBin {
	samples := d.Samples()
	lo, hi := d.Min(), d.Max()
	n := PlotBins
	if hi <= lo {
		return []plotter.HistogramBin{{Min: lo - 0.5, Max: hi + 0.5, Weight: float64(len(samples))}}
	}
	pos := func(x float64) float64 { return (x - lo) / (hi - lo) } // 0..1
	edge := func(f float64) float64 { return lo + f*(hi-lo) }
	if logX {
		pos = func(x float64) float64 { return math.Log(x/lo) / math.Log(hi/lo) }
		edge = func(f float64) float64 { return lo * math.Pow(hi/lo, f) }
	}
	out := make([]plotter.HistogramBin, n)
	for i := range out {
		out[i].Min, out[i].Max = edge(float64(i)/float64(n)), edge(float64(i+1)/float64(n))
	}
	for _, x := range samples {
		out[min(int(pos(x)*float64(n)), n-1)].Weight++
	}
	return out
}
