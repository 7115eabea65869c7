// Package fidelity compares one scenario's run in the simulator (envtest) with its run on a
// real cluster (simulator run --kubeconfig): the figures the two must agree on, judged, and the
// others side by side, so that a difference shows which side is wrong.
package fidelity

import (
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
	Scenario  string `json:"scenario"`
	Simulator Side   `json:"simulator"`
	Cluster   Side   `json:"cluster"`
	Rows      []Row  `json:"rows"`
	Passed    bool   `json:"passed"`
}

// Compare checks that sim is an envtest run and cluster a run on a cluster of the same scenario
// file, and compares their main passes.
func Compare(sim, cluster Input) (Comparison, error) {
	if err := checkInputs(sim, cluster); err != nil {
		return Comparison{}, err
	}
	s, c := sim.Report, cluster.Report
	cmp := Comparison{Scenario: s.Scenario.Name, Simulator: side(sim), Cluster: side(cluster)}
	cmp.Rows = append(cmp.Rows,
		equalInts("misplaced pods", s.Main.MisplacedPods, c.Main.MisplacedPods),
		equalCounts("pods per architecture", s.Main.BoundByArch, c.Main.BoundByArch),
		registryPerImage(s.Registry, c.Registry),
		within("gate-hold p50", latency(s.Main, "gateHold").P50, latency(c.Main, "gateHold").P50, GateHoldP50Tolerance),
	)
	cmp.Rows = append(cmp.Rows, shown(s, c)...)
	cmp.Passed = true
	for _, r := range cmp.Rows {
		if r.Judged() && !r.Met {
			cmp.Passed = false
		}
	}
	return cmp, nil
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
	return Side{Path: in.Path, Commit: e.Commit, Dirty: e.Dirty, StartedAt: in.Report.StartedAt, ControlPlane: e.ControlPlane,
		Verdict: in.Report.VerdictName(), OtherWork: e.ForeignCPUShare}
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
	)
	return rows
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
