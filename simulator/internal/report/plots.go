package report

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// maxCDFPoints bounds the points of one CDF line, keeping SVGs small.
const maxCDFPoints = 800

// LatencyCDFPlot draws the CDF of each latency family of both passes on a
// log-scaled time axis (milliseconds).
func LatencyCDFPlot(r *Report, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — latency CDF", r.Scenario.Name)
	p.X.Label.Text = "latency (ms, log scale)"
	p.Y.Label.Text = "fraction of pods"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	i := 0
	add := func(pass *Pass, family string, dashed bool) error {
		if pass == nil {
			return nil
		}
		xs := pass.Samples.Seconds(family)
		if len(xs) == 0 {
			return nil
		}
		line, err := plotter.NewLine(cdf(xs))
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		if dashed {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		i++
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s %s (n=%d)", pass.Name, family, len(xs)), line)
		return nil
	}
	for _, f := range []string{"gateHold", "schedule", "total"} {
		if err := add(r.Main, f, false); err != nil {
			return err
		}
	}
	for _, f := range []string{"schedule", "total"} {
		for _, other := range []*Pass{r.Baseline, r.Handwritten, r.Floor} {
			if err := add(other, f, true); err != nil {
				return err
			}
		}
	}
	return p.Save(9*vg.Inch, 4.5*vg.Inch, path)
}

// cdf turns samples (seconds) into (milliseconds, fraction) points.
func cdf(xs []float64) plotter.XYs {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	step := max(1, n/maxCDFPoints)
	var pts plotter.XYs
	for k := 0; k < n; k += step {
		pts = append(pts, plotter.XY{X: max(s[k]*1e3, 1e-3), Y: float64(k+1) / float64(n)})
	}
	if last := pts[len(pts)-1]; last.Y < 1 {
		pts = append(pts, plotter.XY{X: max(s[n-1]*1e3, 1e-3), Y: 1})
	}
	return pts
}

// TimelinePlot draws pods created, ungated and bound per second in the main
// pass, with the timeline events as shaded windows.
func TimelinePlot(r *Report, path string) error {
	m := r.Main
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — main pass, pods per second", r.Scenario.Name)
	p.X.Label.Text = "seconds since the first create"
	p.Y.Label.Text = "pods / s"
	p.Add(plotter.NewGrid())
	var peak float64
	series := []struct {
		name string
		v    []int
	}{{"created", m.PerSecond.Created}, {"ungated", m.PerSecond.Ungated}, {"bound", m.PerSecond.Bound}}
	for _, s := range series {
		for _, v := range s.v {
			peak = max(peak, float64(v))
		}
	}
	for _, ev := range r.Timeline {
		end := ev.EndSeconds
		if end <= ev.AtSeconds {
			end = ev.AtSeconds + 0.5
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: ev.AtSeconds, Y: 0}, {X: end, Y: 0}, {X: end, Y: peak * 1.05}, {X: ev.AtSeconds, Y: peak * 1.05}})
		if err != nil {
			return err
		}
		poly.Color = color.NRGBA{R: 255, G: 160, B: 0, A: 60}
		poly.LineStyle.Width = 0
		p.Add(poly)
		label, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: ev.AtSeconds, Y: peak * 1.05}}, Labels: []string{ev.Action}})
		if err == nil {
			p.Add(label)
		}
	}
	for i, s := range series {
		if !slices.ContainsFunc(s.v, func(v int) bool { return v > 0 }) {
			continue // nothing ungated without the operator
		}
		pts := make(plotter.XYs, len(s.v))
		for k, v := range s.v {
			pts[k] = plotter.XY{X: float64(k) + 0.5, Y: float64(v)}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.2)
		p.Add(line)
		p.Legend.Add(s.name, line)
	}
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.TextStyle.XAlign = draw.XLeft
	return p.Save(9*vg.Inch, 4*vg.Inch, path)
}
