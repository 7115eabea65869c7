// Package fidelity compares one scenario's run in the simulator (envtest) with its run on a
// real cluster (simulator run --kubeconfig): the figures the two must agree on, judged, and the
// others side by side, so that a difference shows which side is wrong.
package fidelity

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// GateHoldP50Tolerance is how far the cluster's gate-hold p50 may be from the simulator's,
// relative: the gate is held by archgate's own work (inspection, one patch), which both run
// with the same code; what differs is the path to it (a Service and kube-proxy, the node's
// network, another process layout on the same machine).
const GateHoldP50Tolerance = 0.20

// Input is one side's report and where it was read.
type Input struct {
	Path   string
	Report *report.Report
}

// Pair is a run in the simulator and the run on the cluster right after it. The machine's speed
// drifts over minutes (the same run costs up to half as much CPU again a few minutes later), so
// each cluster run is set against the simulator run nearest to it in time, not against a
// simulator run of another hour.
type Pair struct {
	Simulator, Cluster Input
}

// Side says which run a side of the comparison is.
type Side struct {
	Path         string    `json:"path"`
	Commit       string    `json:"commit"`
	Dirty        bool      `json:"dirty,omitempty"`
	StartedAt    time.Time `json:"startedAt"`
	ControlPlane string    `json:"controlPlane"`
	Verdict      string    `json:"verdict"`
	// OtherWork is the share of the machine's CPU other processes used during the run.
	OtherWork float64 `json:"otherWork"`
	// Busy is the share of the machine's CPU used during the run's main pass, other work
	// included.
	Busy float64 `json:"busy"`
	// GateHoldP50 is the main pass's gate-hold p50, in seconds.
	GateHoldP50 float64 `json:"gateHoldP50Seconds"`
}

// PairSides are the two runs of a pair.
type PairSides struct {
	Simulator Side `json:"simulator"`
	Cluster   Side `json:"cluster"`
}

// Ratio is the cluster's gate-hold p50 over the simulator's; 0 when the simulator's is not
// positive.
func (p PairSides) Ratio() float64 {
	if p.Simulator.GateHoldP50 <= 0 {
		return 0
	}
	return p.Cluster.GateHoldP50 / p.Simulator.GateHoldP50
}

// Row is one figure of both runs. A row with a Bound is judged (Met); the others are shown.
type Row struct {
	Figure    string `json:"figure"`
	Simulator string `json:"simulator"`
	Cluster   string `json:"cluster"`
	Bound     string `json:"bound,omitempty"`
	Met       bool   `json:"met"`
	// Differences name what differed, key by key, when a judged row was not met.
	Differences []string `json:"differences,omitempty"`
}

// Judged reports whether the row has a bound.
func (r Row) Judged() bool { return r.Bound != "" }

// Comparison is the side-by-side report.
type Comparison struct {
	Scenario string `json:"scenario"`
	// Pairs are the runs compared, in the order they ran.
	Pairs []PairSides `json:"pairs"`
	// Median is the index in Pairs of the pair whose gate-hold ratio is the median: its figures
	// fill the rows that are shown and not judged.
	Median int   `json:"median"`
	Rows   []Row `json:"rows"`
	Passed bool  `json:"passed"`
}

// Compare checks that each pair is an envtest run and a run on a cluster of the same scenario
// file, and compares their main passes. What is placed where and what the registry is asked
// must be identical in every pair; gate-hold p50 is judged on the median of the pairs' ratios,
// since one pair's p50 (of the few dozen pods that wait for the registry) moves by more than the
// bound from one run to the next on either side.
func Compare(pairs ...Pair) (Comparison, error) {
	if len(pairs) == 0 {
		return Comparison{}, errors.New("no runs to compare")
	}
	var errs []error
	for _, p := range pairs {
		errs = append(errs, checkInputs(p.Simulator, p.Cluster))
	}
	if err := errors.Join(errs...); err != nil {
		return Comparison{}, err
	}
	first := pairs[0].Simulator.Report.Scenario
	for _, p := range pairs[1:] {
		if s := p.Simulator.Report.Scenario; s.Name != first.Name || s.SHA256 != first.SHA256 {
			return Comparison{}, fmt.Errorf("%s ran another scenario file than %s: %s (sha256 %.12s) and %s (sha256 %.12s)",
				p.Simulator.Path, pairs[0].Simulator.Path, s.Name, s.SHA256, first.Name, first.SHA256)
		}
	}
	out := Comparison{Scenario: first.Name}
	for _, p := range pairs {
		out.Pairs = append(out.Pairs, PairSides{Simulator: side(p.Simulator), Cluster: side(p.Cluster)})
	}
	out.Median = medianPair(out.Pairs)
	out.Rows = append(out.Rows,
		everyPair(pairs, out.Median, func(s, c *report.Report) Row {
			return equalInts("misplaced pods", s.Main.MisplacedPods, c.Main.MisplacedPods)
		}),
		everyPair(pairs, out.Median, func(s, c *report.Report) Row {
			return equalCounts("pods per architecture", s.Main.BoundByArch, c.Main.BoundByArch)
		}),
		everyPair(pairs, out.Median, func(s, c *report.Report) Row { return registryPerImage(s.Registry, c.Registry) }),
		gateHold(out.Pairs, out.Median, GateHoldP50Tolerance),
	)
	m := pairs[out.Median]
	out.Rows = append(out.Rows, shown(m.Simulator.Report, m.Cluster.Report)...)
	out.Passed = true
	for _, r := range out.Rows {
		if r.Judged() && !r.Met {
			out.Passed = false
		}
	}
	return out, nil
}

// medianPair is the index of the pair with the median gate-hold ratio (the lower of the two
// middle ones for an even count).
func medianPair(pairs []PairSides) int {
	order := make([]int, len(pairs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pairs[a].Ratio(), pairs[b].Ratio()) })
	return order[(len(order)-1)/2]
}

// everyPair judges a row in every pair: met when met in all; the values shown are the median
// pair's, and each difference names its pair when there are several.
func everyPair(pairs []Pair, median int, row func(sim, cluster *report.Report) Row) Row {
	out := row(pairs[median].Simulator.Report, pairs[median].Cluster.Report)
	out.Met, out.Differences = true, nil
	for i, p := range pairs {
		r := row(p.Simulator.Report, p.Cluster.Report)
		out.Met = out.Met && r.Met
		for _, d := range r.Differences {
			if len(pairs) > 1 {
				d = fmt.Sprintf("pair %d: %s", i+1, d)
			}
			out.Differences = append(out.Differences, d)
		}
	}
	return out
}

// gateHold judges the median of the pairs' gate-hold p50 ratios against tolerance; the values
// shown are the median pair's.
func gateHold(pairs []PairSides, median int, tolerance float64) Row {
	m := pairs[median]
	r := within("gate-hold p50", m.Simulator.GateHoldP50, m.Cluster.GateHoldP50, tolerance)
	if len(pairs) > 1 {
		r.Figure = fmt.Sprintf("gate-hold p50 (the median of %d pairs' ratios)", len(pairs))
		if !r.Met {
			r.Differences = []string{fmt.Sprintf("gate-hold p50: the median pair's cluster %s against the simulator's %s, beyond %.0f%%",
				r.Cluster, r.Simulator, tolerance*100)}
		}
	}
	return r
}

// checkInputs refuses reports that are not the two sides of one scenario.
func checkInputs(sim, cluster Input) error {
	var errs []error
	for _, in := range []Input{sim, cluster} {
		if in.Report == nil || in.Report.Main == nil {
			errs = append(errs, fmt.Errorf("%s: the report has no main pass", in.Path))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if sim.Report.Cluster != nil {
		errs = append(errs, fmt.Errorf("%s: a run on a cluster (%s), not in the simulator", sim.Path, sim.Report.Cluster.Server))
	}
	if cluster.Report.Cluster == nil {
		errs = append(errs, fmt.Errorf("%s: a run in the simulator (control plane %s), not on a cluster", cluster.Path, cluster.Report.Environment.ControlPlane))
	}
	if a, b := sim.Report.Scenario, cluster.Report.Scenario; a.Name != b.Name || a.SHA256 != b.SHA256 {
		errs = append(errs, fmt.Errorf("%s and %s ran different scenarios: %s (sha256 %.12s) and %s (sha256 %.12s)",
			sim.Path, cluster.Path, a.Name, a.SHA256, b.Name, b.SHA256))
	}
	return errors.Join(errs...)
}

func side(in Input) Side {
	e := in.Report.Environment
	s := Side{Path: in.Path, Commit: e.Commit, Dirty: e.Dirty, StartedAt: in.Report.StartedAt, ControlPlane: e.ControlPlane,
		Verdict: in.Report.VerdictName(), OtherWork: e.ForeignCPUShare, GateHoldP50: latency(in.Report.Main, "gateHold").P50}
	if c := in.Report.Main.Cost; c != nil {
		s.Busy = c.Utilization
	}
	return s
}

func equalInts(figure string, sim, cluster int) Row {
	r := Row{Figure: figure, Simulator: fmt.Sprint(sim), Cluster: fmt.Sprint(cluster), Bound: "identical", Met: sim == cluster}
	if !r.Met {
		r.Differences = []string{fmt.Sprintf("%s: simulator %d, cluster %d", figure, sim, cluster)}
	}
	return r
}

// equalCounts compares two counts by key; a key missing on one side counts 0 there.
func equalCounts[V comparable](figure string, sim, cluster map[string]V) Row {
	r := Row{Figure: figure, Simulator: formatCounts(sim), Cluster: formatCounts(cluster), Bound: "identical", Met: true}
	var zero V
	for _, k := range unionKeys(sim, cluster) {
		if a, b := sim[k], cluster[k]; a != b {
			r.Met = false
			r.Differences = append(r.Differences, fmt.Sprintf("%s: simulator %v, cluster %v", k, orZero(a, zero), orZero(b, zero)))
		}
	}
	return r
}

// registryPerImage compares the registry requests of each repository (the scenarios' images are
// one per repository), kind by kind.
func registryPerImage(sim, cluster *report.RegistryStats) Row {
	const figure = "registry requests per image"
	if sim == nil || cluster == nil || sim.Repositories == nil || cluster.Repositories == nil {
		return Row{Figure: figure, Simulator: countedOrNot(sim), Cluster: countedOrNot(cluster), Bound: "identical",
			Differences: []string{"registry requests per image: not counted on both sides (a run on a cluster needs --registry-metrics)"}}
	}
	flat := func(g *report.RegistryStats) map[string]string {
		out := map[string]string{}
		for repo, kinds := range g.Repositories {
			out[repo] = formatCounts(kinds)
		}
		return out
	}
	r := equalCounts(figure, flat(sim), flat(cluster))
	r.Simulator, r.Cluster = repositoryTotals(sim), repositoryTotals(cluster)
	return r
}

func countedOrNot(g *report.RegistryStats) string {
	if g == nil || g.Repositories == nil {
		return "not counted"
	}
	return repositoryTotals(g)
}

// repositoryTotals sums the requests that named a repository.
func repositoryTotals(g *report.RegistryStats) string {
	var n uint64
	for _, kinds := range g.Repositories {
		for _, v := range kinds {
			n += v
		}
	}
	return fmt.Sprintf("%d requests over %d images", n, len(g.Repositories))
}

// within judges cluster against sim relative to sim (seconds, shown in milliseconds).
func within(figure string, sim, cluster, tolerance float64) Row {
	r := Row{Figure: figure, Simulator: ms(sim), Cluster: ms(cluster), Bound: fmt.Sprintf("within %.0f%%", tolerance*100)}
	if sim > 0 {
		r.Met = math.Abs(cluster/sim-1) <= tolerance
		r.Cluster += relative(sim, cluster)
	}
	if !r.Met {
		r.Differences = []string{fmt.Sprintf("%s: simulator %s, cluster %s, beyond %.0f%%", figure, r.Simulator, r.Cluster, tolerance*100)}
	}
	return r
}

// shown are the figures compared but not judged: what explains a judged difference.
func shown(s, c *report.Report) []Row {
	var rows []Row
	for _, l := range []struct{ name, label, quantile string }{
		{"gateHold", "gate-hold", "p90"}, {"gateHold", "gate-hold", "p99"}, {"schedule", "schedule", "p50"}, {"schedule", "schedule", "p99"},
		{"total", "total", "p50"}, {"total", "total", "p99"}, {"create", "create", "p99"},
	} {
		rows = append(rows, Row{Figure: l.label + " " + l.quantile, Simulator: ms(quantile(latency(s.Main, l.name), l.quantile)),
			Cluster: ms(quantile(latency(c.Main, l.name), l.quantile))})
	}
	// The environment's own latency per watch, write and watch cycle (the scheduler's, which
	// archgate takes no part in), taken off gate-hold: what is left is archgate's.
	own := func(r *report.Report) float64 {
		return latency(r.Main, "gateHold").P50 - latency(r.Main, "schedule").P50
	}
	rows = append(rows,
		Row{Figure: "gate-hold p50 − schedule p50", Simulator: ms(own(s)), Cluster: ms(own(c)) + relative(own(s), own(c))},
		Row{Figure: "throughput", Simulator: fmt.Sprintf("%.1f pods/s", s.Main.Throughput), Cluster: fmt.Sprintf("%.1f pods/s", c.Main.Throughput)},
		Row{Figure: "pods placed at admission", Simulator: fmt.Sprint(s.Main.PlacedAtAdmissionPods), Cluster: fmt.Sprint(c.Main.PlacedAtAdmissionPods)},
		Row{Figure: "pods never gated", Simulator: fmt.Sprint(s.Main.NeverGatedPods), Cluster: fmt.Sprint(c.Main.NeverGatedPods)},
		Row{Figure: "registry requests by kind", Simulator: requestKinds(s.Registry), Cluster: requestKinds(c.Registry)},
		Row{Figure: "other work on the machine", Simulator: fmt.Sprintf("%.0f%%", s.Environment.ForeignCPUShare*100),
			Cluster: fmt.Sprintf("%.0f%%", c.Environment.ForeignCPUShare*100)},
		Row{Figure: "machine busy in the main pass", Simulator: busy(s.Main), Cluster: busy(c.Main)},
	)
	return rows
}

func busy(p *report.Pass) string {
	if p.Cost == nil {
		return "not measured"
	}
	return fmt.Sprintf("%.0f%%", p.Cost.Utilization*100)
}

func requestKinds(g *report.RegistryStats) string {
	if g == nil {
		return "not counted"
	}
	return formatCounts(g.Requests)
}

func latency(p *report.Pass, name string) stats.Summary { return p.Latency[name] }

func quantile(l stats.Summary, q string) float64 {
	switch q {
	case "p50":
		return l.P50
	case "p90":
		return l.P90
	default:
		return l.P99
	}
}

// relative is " (+n%)", cluster against sim; "" when sim is not positive.
func relative(sim, cluster float64) string {
	if sim <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%+.0f%%)", (cluster/sim-1)*100)
}

func ms(seconds float64) string { return fmt.Sprintf("%.1f ms", seconds*1000) }

// formatCounts writes a map as "k v, k v" in key order.
func formatCounts[V any](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %v", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	keys = append(keys, slices.Collect(maps.Keys(b))...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// orZero shows a missing key's zero value as "none" for strings.
func orZero[V comparable](v, zero V) any {
	if s, ok := any(v).(string); ok && v == zero {
		return "none"
	} else if ok {
		return s
	}
	return v
}
