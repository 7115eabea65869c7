package history

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Panel sizes of the trend plot: two columns of panels, one per headline
// figure.
const (
	trendColumns = 2
	panelWidth   = 5 * vg.Inch
	panelHeight  = 2.4 * vg.Inch
	// maxTicks bounds the commit labels under a panel.
	maxTicks = 8
)

var (
	passColor  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	failColor  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	guardColor = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	goalColor  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// TrendPlot draws each headline figure across the reports, oldest on the
// left (x is the report's position; ticks name commits): measured values
// joined by a line, those whose check failed in red, the newest check's
// guard dashed and its goal dotted. A figure spanning more than a factor of
// 20 is drawn on a log scale, so that the early, slow reports do not flatten
// the recent ones.
func (ix Index) TrendPlot(w io.Writer) error {
	head := ix.Headline()
	rows := (len(head) + trendColumns - 1) / trendColumns
	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, trendColumns)
	}
	for i, c := range head {
		p, err := ix.panel(c)
		if err != nil {
			return err
		}
		plots[i/trendColumns][i%trendColumns] = p
	}
	img := vgsvg.New(panelWidth*trendColumns, panelHeight*vg.Length(rows))
	canvases := plot.Align(plots, draw.Tiles{Rows: rows, Cols: trendColumns, PadX: vg.Millimeter, PadY: vg.Millimeter,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}, draw.New(img))
	for r := range plots {
		for c, p := range plots[r] {
			if p != nil {
				p.Draw(canvases[r][c])
			}
		}
	}
	_, err := img.WriteTo(w)
	return err
}

// panel is one figure's plot.
func (ix Index) panel(c scenario.Check) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (%s)", c.Metric.Name, unitLabel(c.Metric.Unit))
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.Add(plotter.NewGrid())
	var all, failed plotter.XYs
	for i, e := range ix.Entries {
		f, ok := e.Figure(c.Metric.Name)
		if !ok || !f.Measured {
			continue
		}
		pt := plotter.XY{X: float64(i + 1), Y: scaled(c.Metric.Unit, f.Value)}
		all = append(all, pt)
		if !f.Passed && e.Verdict != NotJudged {
			failed = append(failed, pt)
		}
	}
	if len(all) == 0 {
		return p, nil
	}
	lines := []float64{scaled(c.Metric.Unit, c.Value)}
	if c.HasGoal {
		lines = append(lines, scaled(c.Metric.Unit, c.Goal))
	}
	if logScale(all, lines) {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	line, points, err := plotter.NewLinePoints(all)
	if err != nil {
		return nil, err
	}
	line.Color, points.Color = passColor, passColor
	points.Shape = draw.CircleGlyph{}
	p.Add(line, points)
	if len(failed) > 0 {
		bad, err := plotter.NewScatter(failed)
		if err != nil {
			return nil, err
		}
		bad.Color, bad.Shape, bad.Radius = failColor, draw.CrossGlyph{}, vg.Points(4)
		p.Add(bad)
		p.Legend.Add("check failed", bad)
	}
	for _, y := range lines { // the lines are not data: keep them in view
		p.Y.Min, p.Y.Max = math.Min(p.Y.Min, y), math.Max(p.Y.Max, y)
	}
	guard := draw.LineStyle{Color: guardColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
	p.Add(horizontal(lines[0], guard))
	p.Legend.Add(fmt.Sprintf("guard %s %s", c.Op, scenario.FormatValue(c.Metric.Unit, c.Value)), &plotter.Line{LineStyle: guard})
	if c.HasGoal {
		goal := draw.LineStyle{Color: goalColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}}
		p.Add(horizontal(lines[1], goal))
		p.Legend.Add("goal "+c.GoalText(), &plotter.Line{LineStyle: goal})
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	p.X.Min, p.X.Max = 0.5, float64(len(ix.Entries))+0.5
	p.X.Tick.Marker = ix.commitTicks()
	p.X.Tick.Label.Font.Size = vg.Points(6)
	return p, nil
}

// horizontal is a line across the panel at y.
func horizontal(y float64, style draw.LineStyle) *plotter.Function {
	f := plotter.NewFunction(func(float64) float64 { return y })
	f.LineStyle = style
	return f
}

// logScale reports whether the values and the guard and goal lines span more
// than a factor of 20 and are all positive.
func logScale(pts plotter.XYs, lines []float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, y := range lines {
		lo, hi = math.Min(lo, y), math.Max(hi, y)
	}
	for _, p := range pts {
		lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
	}
	return lo > 0 && hi/lo > 20
}

// commitTicks labels at most maxTicks reports by their commit.
func (ix Index) commitTicks() plot.ConstantTicks {
	step := max(1, (len(ix.Entries)+maxTicks-1)/maxTicks)
	var ticks []plot.Tick
	for i := 0; i < len(ix.Entries); i += step {
		ticks = append(ticks, plot.Tick{Value: float64(i + 1), Label: ix.Entries[i].Commit[:min(7, len(ix.Entries[i].Commit))]})
	}
	return ticks
}

// scaled converts a value to the unit the axis shows: milliseconds for
// durations, per cent for ratios, MiB for sizes.
func scaled(u scenario.Unit, v float64) float64 {
	switch u {
	case scenario.UnitDuration:
		return v * 1e3
	case scenario.UnitRatio:
		return v * 100
	case scenario.UnitBytes:
		return v / (1 << 20)
	}
	return v
}

// unitLabel names the axis unit of scaled.
func unitLabel(u scenario.Unit) string {
	switch u {
	case scenario.UnitDuration:
		return "ms"
	case scenario.UnitRatio:
		return "%"
	case scenario.UnitBytes:
		return "MiB"
	case scenario.UnitRate:
		return "pods/s"
	case scenario.UnitFactor:
		return "×"
	}
	return "count"
}
