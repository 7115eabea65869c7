package fidelity

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Markdown is the comparison's page: the verdict, the side-by-side table (judged rows first),
// what differed, and which runs were compared.
func (c Comparison) Markdown() string {
	var b strings.Builder
	verdict := "PASSED"
	if !c.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "# Fidelity: %s in the simulator and on a cluster\n\n", c.Scenario)
	fmt.Fprintf(&b, "**%s**: the figures with a bound are judged, the others shown.\n\n", verdict)
	b.WriteString("| figure | simulator (envtest) | cluster | bound | |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range c.Rows {
		mark := ""
		if r.Judged() {
			mark = "✓"
			if !r.Met {
				mark = "✗"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Figure, r.Simulator, r.Cluster, r.Bound, mark)
	}
	var diffs []string
	for _, r := range c.Rows {
		diffs = append(diffs, r.Differences...)
	}
	if len(diffs) > 0 {
		b.WriteString("\n## Differences\n\n")
		for _, d := range diffs {
			fmt.Fprintf(&b, "- %s\n", d)
		}
	}
	if len(c.Pairs) > 1 {
		fmt.Fprintf(&b, "\n## Pairs\n\nEach cluster run is set against the simulator run just before it; the shown figures above are pair %d's, the median.\n\n", c.Median+1)
		b.WriteString("| pair | gate-hold p50 (simulator / cluster) | cluster ÷ simulator | machine busy (simulator / cluster) | other work (simulator / cluster) |\n| --- | --- | --- | --- | --- |\n")
		for i, p := range c.Pairs {
			fmt.Fprintf(&b, "| %d | %s / %s | ×%.2f | %.0f%% / %.0f%% | %.0f%% / %.0f%% |\n", i+1, ms(p.Simulator.GateHoldP50), ms(p.Cluster.GateHoldP50),
				p.Ratio(), p.Simulator.Busy*100, p.Cluster.Busy*100, p.Simulator.OtherWork*100, p.Cluster.OtherWork*100)
		}
	}
	b.WriteString("\n## Runs\n\n| pair | side | report | commit | started | control plane | verdict | other work |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for i, p := range c.Pairs {
		for _, s := range []struct {
			name string
			side Side
		}{{"simulator", p.Simulator}, {"cluster", p.Cluster}} {
			commit := s.side.Commit[:min(12, len(s.side.Commit))]
			if s.side.Dirty {
				commit += " (dirty)"
			}
			fmt.Fprintf(&b, "| %d | %s | `%s` | %s | %s | %s | %s | %.0f%% |\n", i+1, s.name, filepath.Base(s.side.Path), commit,
				s.side.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), s.side.ControlPlane, s.side.Verdict, s.side.OtherWork*100)
		}
	}
	b.WriteString("\nOther work is the CPU share of processes that are not the run's own: on the cluster side it\n" +
		"includes the cluster's apiserver, etcd, scheduler, kubelet, kwok, registry and archgate's pods.\n")
	return b.String()
}

// Write writes the page and the JSON as dir/<stem>.md and dir/<stem>.json and returns the
// page's path.
func (c Comparison) Write(dir, stem string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	page := filepath.Join(dir, stem+".md")
	if err := os.WriteFile(filepath.Join(dir, stem+".json"), append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	return page, os.WriteFile(page, []byte(c.Markdown()), 0o644)
}
