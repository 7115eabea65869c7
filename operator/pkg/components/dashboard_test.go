/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package components

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// dashboardFile is the Grafana dashboard deploy/components/monitoring ships.
const dashboardFile = "../../../deploy/components/monitoring/dashboards/archgate.json"

// panel is what the test reads of a Grafana panel: rows nest panels.
type panel struct {
	ID      int    `json:"id"`
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// promqlKeywords are PromQL words that are no metric: binary operators and modifiers, and the
// aggregation operators, which may be followed by a grouping clause rather than "(".
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

// promqlLabelLists are PromQL words followed by a list of label names in parentheses.
var promqlLabelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// promqlMetricNames returns the metric names a PromQL expression selects, in order: the
// identifiers that are not functions or aggregations (followed by "("), keywords, label names
// (in braces or after by, without, on, ignoring, group_left, group_right), strings, numbers,
// durations, or Grafana variables ($name, ${name}). It does not check the expression's syntax
// (Prometheus does that), only what it names: the PromQL parser is in the prometheus/prometheus
// module, whose dependencies the operator's module would take on for this one test.
func promqlMetricNames(expr string) ([]string, error) {
	var names []string
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[i])) {
			i++
		}
		return i
	}
	// skipString returns the index after the string that starts at i.
	skipString := func(i int) (int, error) {
		quote := expr[i]
		for j := i + 1; j < len(expr); j++ {
			switch expr[j] {
			case '\\':
				if quote != '`' {
					j++ // the escaped character
				}
			case quote:
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at %d", i)
	}
	// closing returns the index after the bracket that closes the one at i, skipping strings.
	closing := func(i int, left, right byte) (int, error) {
		depth := 0
		for j := i; j < len(expr); j++ {
			switch c := expr[j]; c {
			case '"', '\'', '`':
				end, err := skipString(j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case left:
				depth++
			case right:
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("%q at %d is not closed", left, i)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '{':
			end, err := closing(i, '{', '}')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '[':
			end, err := closing(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				end, err := closing(i, '{', '}')
				if err != nil {
					return nil, err
				}
				i = end
				continue
			}
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
			word, next := expr[start:i], skipSpace(i)
			switch {
			case promqlLabelLists[strings.ToLower(word)]:
				if next < len(expr) && expr[next] == '(' {
					end, err := closing(next, '(', ')')
					if err != nil {
						return nil, err
					}
					i = end
				}
			case promqlKeywords[strings.ToLower(word)]:
			case next < len(expr) && expr[next] == '(':
				// a function or an aggregation
			default:
				names = append(names, word)
			}
		default:
			i++
		}
	}
	return names, nil
}

func TestPromQLMetricNames(t *testing.T) {
	tests := map[string]struct {
		expr string
		want []string
	}{
		"a selector":             {expr: `archgate_placement_gated_pods`, want: []string{"archgate_placement_gated_pods"}},
		"labels are not metrics": {expr: `up{job="a", namespace=~"x|y"}`, want: []string{"up"}},
		"a range and a function": {expr: `rate(archgate_inspect_errors_total{reason!="canceled"}[$__rate_interval])`, want: []string{"archgate_inspect_errors_total"}},
		"grouping before the argument": {
			expr: `histogram_quantile(0.99, sum by (le, result) (rate(archgate_webhook_request_duration_seconds_bucket[5m])))`,
			want: []string{"archgate_webhook_request_duration_seconds_bucket"},
		},
		"grouping after the argument":      {expr: `sum(rate(a_total[5m])) without (pod, instance)`, want: []string{"a_total"}},
		"an aggregation then its grouping": {expr: `count by (version) (x) + topk by (a) (5, y)`, want: []string{"x", "y"}},
		"binary operators and matching": {
			expr: "sum by (reason) (rate(a_total[10m]))\n/ ignoring(reason) group_left\nsum(rate(b_count[10m])) > bool 0.2 or vector(0)",
			want: []string{"a_total", "b_count"},
		},
		"offset and durations":      {expr: `increase(a_total[1h] offset 30m) unless b`, want: []string{"a_total", "b"}},
		"strings with braces":       {expr: `label_replace(a, "dst", "$1 \"{x}\"", "src", '(.*)')`, want: []string{"a"}},
		"Grafana variables":         {expr: `a{job=~"$job"} * ${factor} + $scale`, want: []string{"a"}},
		"count by version":          {expr: `count by (version) (archgate_build_info{component="webhook"})`, want: []string{"archgate_build_info"}},
		"a number with an exponent": {expr: `a > 1e3`, want: []string{"a"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := promqlMetricNames(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`a{job="x"`, `rate(a[5m)`, `a{x="unterminated}`} {
		if got, err := promqlMetricNames(bad); err == nil {
			t.Errorf("promqlMetricNames(%q) = %v, want an error", bad, got)
		}
	}
}

// TestDashboardNamesExportedMetrics: every query of the Grafana dashboard selects only metrics
// the components register; a histogram's _bucket, _sum and _count series only of a registered
// histogram.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		UID    string  `json:"uid"`
		Title  string  `json:"title"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dashboard.UID == "" || dashboard.Title == "" {
		t.Errorf("the dashboard needs a uid and a title (uid %q, title %q)", dashboard.UID, dashboard.Title)
	}
	exported := exportedMetrics(t)
	known := func(name string) bool {
		if _, ok := exported[name]; ok {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && exported[base].typ == "histogram" {
				return true
			}
		}
		return false
	}
	ids, queries := map[int]string{}, 0
	var walk func([]panel)
	walk = func(panels []panel) {
		for _, p := range panels {
			if other, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, target := range p.Targets {
				queries++
				names, err := promqlMetricNames(target.Expr)
				if err != nil {
					t.Errorf("panel %q: %q: %v", p.Title, target.Expr, err)
					continue
				}
				if len(names) == 0 {
					t.Errorf("panel %q: %q selects no metric", p.Title, target.Expr)
				}
				for _, n := range names {
					if !known(n) {
						t.Errorf("panel %q selects %s, which no component exports: %s", p.Title, n, target.Expr)
					}
				}
			}
		}
	}
	walk(dashboard.Panels)
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
}
