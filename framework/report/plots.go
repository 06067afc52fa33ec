package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// palette: colour-blind-safe (Okabe-Ito), one colour per curve or cause.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x9E, 0x73, 0xff}, // green
	{0xCC, 0x79, 0xA7, 0xff}, // purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky
	{0x00, 0x00, 0x00, 0xff},
}

var grey = color.RGBA{0x99, 0x99, 0x99, 0xff}

// cdfCurve is one latency distribution to draw.
type cdfCurve struct {
	Label string
	Hist  *fortioresult.Histogram // seconds, as fortio writes it
	// Documented percentiles in ms ("50" -> 0.5), marked on the curve's colour.
	Documented map[string]float64
}

// cdfPoints turns fortio's histogram buckets (cumulative Percent at each
// bucket's End) into CDF points in ms. Non-positive values are dropped: the
// x axis is logarithmic.
func cdfPoints(h *fortioresult.Histogram) plotter.XYs {
	var pts plotter.XYs
	if h == nil || len(h.Data) == 0 {
		return pts
	}
	if s := h.Data[0].Start * 1000; s > 0 {
		pts = append(pts, plotter.XY{X: s, Y: 0})
	}
	for _, b := range h.Data {
		if x := b.End * 1000; x > 0 {
			pts = append(pts, plotter.XY{X: x, Y: b.Percent})
		}
	}
	return pts
}

// latencyCDF draws the curves' CDFs on a log-scaled ms axis with the
// documented percentiles as hollow markers, and returns the SVG.
func latencyCDF(title string, curves []cdfCurve) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "latency (ms, log scale)"
	p.Y.Label.Text = "requests at or below (%)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 100
	p.Add(plotter.NewGrid())
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Millimeter
	p.Legend.YOffs = vg.Millimeter * 4
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for i, c := range curves {
		pts := cdfPoints(c.Hist)
		if len(pts) == 0 {
			continue
		}
		col := palette[i%len(palette)]
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Label, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = col
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(c.Label, l)
		for _, pt := range pts {
			xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
		}
		if len(c.Documented) > 0 {
			var doc plotter.XYs
			for _, k := range verdict.SortedPercentiles(c.Documented) {
				q, err := strconv.ParseFloat(k, 64)
				if err != nil || c.Documented[k] <= 0 {
					continue
				}
				doc = append(doc, plotter.XY{X: c.Documented[k], Y: q})
				xmin, xmax = math.Min(xmin, c.Documented[k]), math.Max(xmax, c.Documented[k])
			}
			if len(doc) > 0 {
				s, err := plotter.NewScatter(doc)
				if err != nil {
					return nil, err
				}
				s.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(4), Shape: draw.RingGlyph{}}
				p.Add(s)
				p.Legend.Add(c.Label+" documented P50…P99.9", s)
			}
		}
	}
	if math.IsInf(xmin, 1) {
		return nil, fmt.Errorf("%s: no histogram buckets to draw", title)
	}
	// A decade of margin either side keeps LogTicks from running out of labels.
	p.X.Min, p.X.Max = math.Pow(10, math.Floor(math.Log10(xmin))), math.Pow(10, math.Ceil(math.Log10(xmax*1.0001)))
	return svgOf(p, 16*vg.Centimeter, 10*vg.Centimeter)
}

// rolloutTimeline draws the timed errors (503, -1 by cause) per restart
// cycle, stacked,
// on a time axis in seconds since the load started, with every cycle's start
// as a dashed line and its restart-to-complete span as a grey band under the
// axis.
func rolloutTimeline(title string, tl Timeline) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since the load started"
	p.Y.Label.Text = "errors in the cycle (503, -1)"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	t0 := tl.Start
	if t0.IsZero() && len(tl.Cycles) > 0 {
		t0 = tl.Cycles[0].Start
	}
	end := tl.End
	if end.IsZero() && len(tl.Cycles) > 0 {
		end = tl.Cycles[len(tl.Cycles)-1].End
	}
	endS := end.Sub(t0).Seconds()
	counts, before := tl.PerCycle()
	causes := tl.Causes()
	ymax := 1.0
	// Stack: layer k holds causes[0..k]; drawn top layer first so each
	// lower layer paints over the one above it.
	for k := len(causes) - 1; k >= 0; k-- {
		var bins []plotter.HistogramBin
		for i, c := range tl.Cycles {
			lo := c.Start.Sub(t0).Seconds()
			hi := endS
			if i+1 < len(tl.Cycles) {
				hi = tl.Cycles[i+1].Start.Sub(t0).Seconds()
			}
			if hi <= lo {
				hi = lo + 0.001
			}
			n := 0
			for _, cause := range causes[:k+1] {
				n += counts[i][cause]
			}
			ymax = math.Max(ymax, float64(n))
			bins = append(bins, plotter.HistogramBin{Min: lo, Max: hi, Weight: float64(n)})
		}
		if len(bins) == 0 {
			break
		}
		h := &plotter.Histogram{Bins: bins, FillColor: palette[k%len(palette)], LineStyle: draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}}
		p.Add(h)
		p.Legend.Add(causes[k], h)
	}
	for i, c := range tl.Cycles {
		x := c.Start.Sub(t0).Seconds()
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: ymax * 1.1}})
		if err != nil {
			return nil, err
		}
		l.Color = grey
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(l)
		band, err := plotter.NewLine(plotter.XYs{{X: x, Y: -ymax * 0.04}, {X: c.End.Sub(t0).Seconds(), Y: -ymax * 0.04}})
		if err != nil {
			return nil, err
		}
		band.Color = grey
		band.Width = vg.Points(4)
		if c.Error != "" {
			band.Color = palette[1]
		}
		p.Add(band)
		if i == 0 {
			p.Legend.Add("cycle start", l)
			p.Legend.Add("restart until complete", band)
		}
	}
	p.X.Min, p.X.Max = 0, math.Max(endS, 1)
	p.Y.Min, p.Y.Max = -ymax*0.08, ymax*1.25
	var notes []string
	if n := sumCounts(before); n > 0 {
		notes = append(notes, fmt.Sprintf("%d before the first cycle", n))
	}
	if tl.Unattributed > 0 {
		notes = append(notes, fmt.Sprintf("%d unexplained -1 (no time)", tl.Unattributed))
	}
	if untimed := tl.Code503 - tl.Timed503(); untimed > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d 503s not timed (load without log-errors)", untimed, tl.Code503))
	}
	notes = append(notes, fmt.Sprintf("%d requests", tl.Requests))
	p.X.Label.Text += " — " + strings.Join(notes, "; ")
	return svgOf(p, 14*vg.Centimeter, 9*vg.Centimeter) // two side by side on a laptop screen
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// svgOf renders p as SVG without the XML prolog, ready to sit inline in HTML.
func svgOf(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, err
	}
	out := b.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i > 0 {
		out = out[i:]
	}
	return out, nil
}
