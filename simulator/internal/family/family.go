// Package family reads the reports of a scenario family (scenarios that
// share a shape and differ in size, e.g. scale-1k … scale-30k), tabulates
// cost per pod and gate-hold quantiles against size, plots both and checks
// that the cost per pod stays flat.
package family

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/archgate/archgate/simulator/internal/report"
)

// Point is one member of the family: its newest report's figures.
type Point struct {
	// Scenario and Report name the run.
	Scenario string `json:"scenario"`
	Report   string `json:"report"`
	// Pods is the size.
	Pods int `json:"pods"`
	// CPUPer1kPods is CPU seconds of every component per 1,000 pods;
	// Components breaks it down.
	CPUPer1kPods float64            `json:"cpuPer1kPods"`
	Components   map[string]float64 `json:"components"`
	// WritesPerPod is apiserver writes per pod.
	WritesPerPod float64 `json:"writesPerPod"`
	// GateHoldP50, P99 in seconds.
	GateHoldP50 float64 `json:"gateHoldP50"`
	GateHoldP99 float64 `json:"gateHoldP99"`
	// Passed is the run's verdict.
	Passed bool `json:"passed"`
}

// Load finds, for each scenario directory reportsDir/<prefix>-*/, the
// newest JSON report and returns the points ordered by size.
func Load(reportsDir, prefix string) ([]Point, error) {
	dirs, err := filepath.Glob(filepath.Join(reportsDir, prefix+"-*"))
	if err != nil {
		return nil, err
	}
	var out []Point
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.json"))
		if len(files) == 0 {
			continue
		}
		slices.SortFunc(files, func(a, b string) int { return cmp.Compare(newest(a), newest(b)) })
		path := files[len(files)-1]
		r, err := report.Load(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Main == nil || r.Main.Cost == nil {
			return nil, fmt.Errorf("%s: no cost accounting in the main pass (run it with this simulator)", path)
		}
		out = append(out, point(r, path))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no reports under %s/%s-*/", reportsDir, prefix)
	}
	slices.SortFunc(out, func(a, b Point) int { return cmp.Compare(a.Pods, b.Pods) })
	return out, nil
}

// newest orders report files by their time stamp, the last part of the name.
func newest(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".json")
	return base[strings.LastIndex(base, "-")+1:]
}

func point(r *report.Report, path string) Point {
	c := r.Main.Cost
	p := Point{Scenario: r.Scenario.Name, Report: filepath.Base(path), Pods: r.Main.Pods,
		CPUPer1kPods: c.CPUSecondsPer1kPods, WritesPerPod: c.APIWritesPerPod, Components: map[string]float64{},
		GateHoldP50: math.NaN(), GateHoldP99: math.NaN(), Passed: r.Passed}
	for _, comp := range c.Components {
		p.Components[comp.Name] = comp.CPUSecondsPer1kPods
	}
	if g, ok := r.Main.Latency["gateHold"]; ok && g.N > 0 {
		p.GateHoldP50, p.GateHoldP99 = g.P50, g.P99
	}
	return p
}

// Flatness is how far the cost per pod strays from the family's mean.
type Flatness struct {
	// Mean CPU seconds per 1,000 pods; MaxDeviation is the largest
	// |x/mean − 1| and Worst the scenario that has it.
	Mean, MaxDeviation float64
	Worst              string
}

// CheckFlat measures the cost per pod's flatness and fails when a point
// strays more than tolerance (0.2 = ±20%) from the mean.
func CheckFlat(points []Point, tolerance float64) (Flatness, error) {
	var f Flatness
	for _, p := range points {
		f.Mean += p.CPUPer1kPods / float64(len(points))
	}
	for _, p := range points {
		if d := math.Abs(p.CPUPer1kPods/f.Mean - 1); d > f.MaxDeviation {
			f.MaxDeviation, f.Worst = d, p.Scenario
		}
	}
	if f.MaxDeviation > tolerance {
		return f, fmt.Errorf("cost per pod is not flat: %s strays %.0f%% from the mean %.2f CPU-s per 1k pods (tolerance ±%.0f%%)",
			f.Worst, f.MaxDeviation*100, f.Mean, tolerance*100)
	}
	return f, nil
}

// WriteMarkdown writes the family's table and verdict.
func WriteMarkdown(w io.Writer, prefix string, points []Point, f Flatness, flatErr error, plotFile string) {
	fmt.Fprintf(w, "# %s family\n\n", prefix)
	verdict := fmt.Sprintf("**PASSED** — cost per pod flat: largest deviation %.0f%% (%s) from the mean %.2f CPU-s per 1k pods.", f.MaxDeviation*100, f.Worst, f.Mean)
	if flatErr != nil {
		verdict = "**FAILED** — " + flatErr.Error() + "."
	}
	fmt.Fprintf(w, "%s\n\n![cost and gate-hold against size](%s)\n\n", verdict, plotFile)
	names := componentNames(points)
	fmt.Fprintf(w, "| scenario | pods | CPU-s / 1k pods | %s | writes/pod | gate-hold p50 | gate-hold p99 | run passed | report |\n",
		strings.Join(names, " | "))
	fmt.Fprintf(w, "|---|---|---|%s---|---|---|---|---|\n", strings.Repeat("---|", len(names)))
	for _, p := range points {
		var comps []string
		for _, n := range names {
			comps = append(comps, fmt.Sprintf("%.2f", p.Components[n]))
		}
		fmt.Fprintf(w, "| %s | %d | %.2f | %s | %.2f | %.1f ms | %.1f ms | %v | %s |\n", p.Scenario, p.Pods, p.CPUPer1kPods,
			strings.Join(comps, " | "), p.WritesPerPod, p.GateHoldP50*1000, p.GateHoldP99*1000, p.Passed, p.Report)
	}
}

func componentNames(points []Point) []string {
	var names []string
	for _, p := range points {
		for n := range p.Components {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.SortFunc(names, report.CompareComponents)
	return names
}

// Plot draws cost per 1,000 pods and gate-hold p50/p99 against size (log x)
// into an SVG with two panels side by side.
func Plot(points []Point, path string) error {
	cost := plot.New()
	cost.Title.Text = "CPU seconds per 1,000 pods"
	hold := plot.New()
	hold.Title.Text = "gate-hold (ms)"
	for _, p := range []*plot.Plot{cost, hold} {
		p.X.Label.Text = "pods (log scale)"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
	}
	series := func(f func(Point) float64) plotter.XYs {
		var xy plotter.XYs
		for _, p := range points {
			if v := f(p); !math.IsNaN(v) {
				xy = append(xy, plotter.XY{X: float64(p.Pods), Y: v})
			}
		}
		return xy
	}
	if err := plotutil.AddLinePoints(cost, "all components", series(func(p Point) float64 { return p.CPUPer1kPods })); err != nil {
		return err
	}
	if err := plotutil.AddLinePoints(hold,
		"p50", series(func(p Point) float64 { return p.GateHoldP50 * 1000 }),
		"p99", series(func(p Point) float64 { return p.GateHoldP99 * 1000 })); err != nil {
		return err
	}
	cost.Y.Min = 0
	hold.Y.Min = 0
	img := vgImage(path)
	if img == nil {
		return errors.New("unsupported plot format (want .svg)")
	}
	return img(cost, hold)
}

// vgImage returns a writer of two side-by-side panels for path's format.
func vgImage(path string) func(a, b *plot.Plot) error {
	if filepath.Ext(path) != ".svg" {
		return nil
	}
	return func(a, b *plot.Plot) error {
		c := vgsvg.New(10*vg.Inch, 4*vg.Inch)
		tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: 5 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter}
		panels := plot.Align([][]*plot.Plot{{a, b}}, tiles, draw.New(c))
		a.Draw(panels[0][0])
		b.Draw(panels[0][1])
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := c.WriteTo(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}
