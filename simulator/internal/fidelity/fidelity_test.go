package fidelity

import (
	"strings"
	"testing"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// run is a report of the scenario "fidelity" with the given figures.
func run(onCluster bool, gateHoldP50 float64, byArch map[string]int, repos map[string]map[string]uint64) *report.Report {
	r := &report.Report{
		Scenario: report.ScenarioInfo{Name: "fidelity", SHA256: "abc"},
		Main:     &report.Pass{BoundByArch: byArch, Latency: map[string]stats.Summary{"gateHold": {P50: gateHoldP50}}},
	}
	if repos != nil {
		r.Registry = &report.RegistryStats{Repositories: repos}
	}
	if onCluster {
		r.Cluster = &report.Cluster{Server: "https://127.0.0.1:6443"}
	}
	return r
}

func TestCompare(t *testing.T) {
	arch := map[string]int{"amd64": 10, "arm64": 5}
	repos := map[string]map[string]uint64{"app-0": {"manifest_get": 1}, "app-1": {"manifest_get": 1, "blob_get": 1}}
	sim := run(false, 0.010, arch, repos)
	for _, tc := range []struct {
		name    string
		cluster *report.Report
		passed  bool
		differs string // a substring of the differences when not passed
	}{
		{name: "same figures, gate-hold 15% slower", cluster: run(true, 0.0115, arch, repos), passed: true},
		{name: "gate-hold 25% slower", cluster: run(true, 0.0125, arch, repos), differs: "gate-hold p50"},
		{name: "a pod on another architecture", cluster: run(true, 0.010, map[string]int{"amd64": 9, "arm64": 6}, repos),
			differs: "amd64: simulator 10, cluster 9"},
		{name: "an architecture only on the cluster", cluster: run(true, 0.010, map[string]int{"amd64": 10, "arm64": 5, "s390x": 1}, repos),
			differs: "s390x: simulator 0, cluster 1"},
		{name: "an image read twice", cluster: run(true, 0.010, arch, map[string]map[string]uint64{"app-0": {"manifest_get": 2}, "app-1": {"manifest_get": 1, "blob_get": 1}}),
			differs: "app-0: simulator manifest_get 1, cluster manifest_get 2"},
		{name: "registry not counted on the cluster", cluster: run(true, 0.010, arch, nil), differs: "not counted on both sides"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(Pair{Input{Path: "sim.json", Report: sim}, Input{Path: "cluster.json", Report: tc.cluster}})
			if err != nil {
				t.Fatal(err)
			}
			if c.Passed != tc.passed {
				t.Fatalf("passed = %t, want %t\n%s", c.Passed, tc.passed, c.Markdown())
			}
			if page := c.Markdown(); tc.differs != "" && !strings.Contains(page, tc.differs) {
				t.Errorf("page lacks %q:\n%s", tc.differs, page)
			}
		})
	}
}

func TestCompareRefusesTheWrongReports(t *testing.T) {
	arch := map[string]int{"amd64": 1}
	other := run(true, 0.01, arch, nil)
	other.Scenario.SHA256 = "def"
	for _, tc := range []struct {
		name         string
		sim, cluster *report.Report
		want         string
	}{
		{"two simulator runs", run(false, 0.01, arch, nil), run(false, 0.01, arch, nil), "cluster.json: a run in the simulator"},
		{"sides swapped", run(true, 0.01, arch, nil), run(false, 0.01, arch, nil), "sim.json: a run on a cluster"},
		{"another scenario file", run(false, 0.01, arch, nil), other, "ran different scenarios"},
		{"no main pass", &report.Report{}, run(true, 0.01, arch, nil), "sim.json: the report has no main pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compare(Pair{Input{Path: "sim.json", Report: tc.sim}, Input{Path: "cluster.json", Report: tc.cluster}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestComparePairs: gate-hold is judged on the median pair's ratio, whatever one pair says;
// what is placed where must agree in every pair.
func TestComparePairs(t *testing.T) {
	arch := map[string]int{"amd64": 10, "arm64": 5}
	repos := map[string]map[string]uint64{"app-0": {"manifest_get": 1}}
	pair := func(sim, cluster float64, clusterArch map[string]int) Pair {
		return Pair{Input{Path: "sim.json", Report: run(false, sim, arch, repos)}, Input{Path: "cluster.json", Report: run(true, cluster, clusterArch, repos)}}
	}
	for _, tc := range []struct {
		name    string
		pairs   []Pair
		passed  bool
		median  int
		differs string
	}{
		{name: "one pair 50% slower, the median 10%", passed: true, median: 2,
			pairs: []Pair{pair(0.010, 0.015, arch), pair(0.020, 0.018, arch), pair(0.012, 0.0132, arch)}},
		{name: "two pairs of three beyond the bound", median: 2, differs: "the median pair's cluster 26.0 ms",
			pairs: []Pair{pair(0.010, 0.015, arch), pair(0.020, 0.021, arch), pair(0.020, 0.026, arch)}},
		{name: "an architecture differs in one pair only", median: 1, differs: "pair 2: amd64: simulator 10, cluster 9",
			pairs: []Pair{pair(0.010, 0.010, arch), pair(0.010, 0.010, map[string]int{"amd64": 9, "arm64": 6}), pair(0.010, 0.010, arch)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(tc.pairs...)
			if err != nil {
				t.Fatal(err)
			}
			page := c.Markdown()
			if c.Passed != tc.passed || c.Median != tc.median {
				t.Fatalf("passed = %t, median pair %d; want %t, %d\n%s", c.Passed, c.Median, tc.passed, tc.median, page)
			}
			if tc.differs != "" && !strings.Contains(page, tc.differs) {
				t.Errorf("page lacks %q:\n%s", tc.differs, page)
			}
		})
	}
}
