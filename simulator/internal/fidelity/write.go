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
	b.WriteString("\n## Runs\n\n| side | report | commit | started | control plane | verdict | other work |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, s := range []struct {
		name string
		side Side
	}{{"simulator", c.Simulator}, {"cluster", c.Cluster}} {
		commit := s.side.Commit[:min(12, len(s.side.Commit))]
		if s.side.Dirty {
			commit += " (dirty)"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %.0f%% |\n", s.name, filepath.Base(s.side.Path), commit,
			s.side.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), s.side.ControlPlane, s.side.Verdict, s.side.OtherWork*100)
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
