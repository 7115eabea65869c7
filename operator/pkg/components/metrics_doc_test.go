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
	"bufio"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/egress"
)

// metricsDoc is the reference table of the metrics archgate's components export.
const metricsDoc = "../../../docs/metrics.md"

// exportedMetric is what a component's registration says about one metric family.
type exportedMetric struct {
	// typ is the family's type as gathered ("counter", "gauge", "histogram"), or "" when the
	// family has no series before the component runs (a vector without pre-created label
	// values, a collector reading state at scrape time).
	typ string
	// labels are its label names, sorted.
	labels []string
	// components are the components that register it, sorted.
	components []string
}

// recordingRegisterer registers with a registry and remembers every collector, so that their
// descriptors can be read: Gather returns only families that have a series, and most vectors
// have none until the component runs.
type recordingRegisterer struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registerer.Register(c)
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// descPattern reads prometheus.Desc.String(), the only public view of a descriptor's name and
// label names.
var descPattern = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: ".*", unit: "[^"]*", constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

// exportedMetrics registers each component's own metrics exactly as the component does (the
// same constructors and registration functions, with every optional part on) into a fresh
// registry per component, and returns what they export by name. controller-runtime's metrics
// are not among them: they live in its global registry.
func exportedMetrics(t *testing.T) map[string]exportedMetric {
	t.Helper()
	proxy, err := egress.Listen(egress.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	register := map[string]func(prometheus.Registerer) error{
		"operator": func(prometheus.Registerer) error { return nil },
		"webhook": func(r prometheus.Registerer) error {
			_, err := newWebhookMetrics(r)
			return err
		},
		"controller": func(r prometheus.Registerer) error {
			everything := ControllerOptions{ExecFormatErrorMonitor: true, KnownImagesConfigMap: DefaultKnownImagesConfigMap,
				ImageInspection: ptr.To(v1beta1.DefaultImageInspectionSettings())}
			return newControllerMetrics().register(r, everything, proxy)
		},
	}
	out := map[string]exportedMetric{}
	for component, reg := range register {
		registry := prometheus.NewPedanticRegistry()
		rec := &recordingRegisterer{Registerer: registry}
		if err := (Common{Registerer: rec}).announce(component); err != nil {
			t.Fatal(err)
		}
		if err := reg(rec); err != nil {
			t.Fatalf("%s: %v", component, err)
		}
		families, err := registry.Gather()
		if err != nil {
			t.Fatalf("%s: gathering: %v", component, err)
		}
		types := map[string]string{}
		for _, f := range families {
			types[f.GetName()] = strings.ToLower(f.GetType().String())
		}
		for _, c := range rec.collectors {
			descs := make(chan *prometheus.Desc, 64)
			go func() { c.Describe(descs); close(descs) }()
			for d := range descs {
				m := descPattern.FindStringSubmatch(d.String())
				if m == nil {
					t.Fatalf("cannot read descriptor %s", d)
				}
				name := m[1]
				var labels []string
				for _, l := range strings.Split(m[2], ",") {
					if n, _, ok := strings.Cut(l, "="); ok {
						labels = append(labels, n)
					}
				}
				for _, l := range strings.Split(m[3], ",") {
					if l != "" {
						labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
					}
				}
				slices.Sort(labels)
				e := out[name]
				if e.components != nil && !slices.Equal(e.labels, labels) {
					t.Errorf("%s: labels %v in one component, %v in another", name, e.labels, labels)
				}
				e.labels = labels
				if e.typ == "" {
					e.typ = types[name]
				}
				if !slices.Contains(e.components, component) {
					e.components = append(e.components, component)
					slices.Sort(e.components)
				}
				out[name] = e
			}
		}
	}
	return out
}

// documentedMetric is one row of the reference table.
type documentedMetric struct {
	typ, unit  string
	labels     []string
	components []string
}

// components the reference table names; "all" stands for every one.
var allComponents = []string{"controller", "operator", "webhook"}

// readMetricsDoc parses the rows of the reference table: | `name` | type | `label`, … or — |
// unit | component[, component] or all | meaning |.
func readMetricsDoc(t *testing.T) map[string]documentedMetric {
	t.Helper()
	f, err := os.Open(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]documentedMetric{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if !strings.HasPrefix(text, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(text, "|"), "|")
		if len(cells) != 6 {
			t.Errorf("%s:%d: %d cells, want 6 (metric, type, labels, unit, component, meaning)", metricsDoc, line, len(cells))
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		name := strings.Trim(cells[0], "`")
		var labels []string
		if cells[2] != "—" {
			for _, l := range strings.Split(cells[2], ",") {
				labels = append(labels, strings.Trim(strings.TrimSpace(l), "`"))
			}
		}
		slices.Sort(labels)
		var components []string
		if cells[4] == "all" {
			components = allComponents
		} else {
			for _, c := range strings.Split(cells[4], ",") {
				components = append(components, strings.TrimSpace(c))
			}
			slices.Sort(components)
		}
		if _, dup := out[name]; dup {
			t.Errorf("%s:%d: %s is listed twice", metricsDoc, line, name)
		}
		if cells[5] == "" {
			t.Errorf("%s:%d: %s has no meaning", metricsDoc, line, name)
		}
		out[name] = documentedMetric{typ: cells[1], unit: cells[3], labels: labels, components: components}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetricsReference: docs/metrics.md lists every metric the components register, and only
// those, with their type, labels and components; a unit that the name states (…_seconds,
// …_bytes) is the documented one.
func TestMetricsReference(t *testing.T) {
	exported, documented := exportedMetrics(t), readMetricsDoc(t)
	for _, name := range slices.Sorted(maps.Keys(exported)) {
		e := exported[name]
		d, ok := documented[name]
		if !ok {
			t.Errorf("%s (%s, labels %v, registered by %v) is not in %s", name, e.typ, e.labels, e.components, metricsDoc)
			continue
		}
		if e.typ != "" && e.typ != d.typ {
			t.Errorf("%s: documented as a %s, registered as a %s", name, d.typ, e.typ)
		}
		if diff := cmp.Diff(e.labels, d.labels); diff != "" {
			t.Errorf("%s: labels (-registered +documented):\n%s", name, diff)
		}
		if diff := cmp.Diff(e.components, d.components); diff != "" {
			t.Errorf("%s: components (-registered +documented):\n%s", name, diff)
		}
		for suffix, unit := range map[string]string{"_seconds": "seconds", "_bytes": "bytes"} {
			if strings.HasSuffix(name, suffix) && d.unit != unit {
				t.Errorf("%s: unit %q, want %q", name, d.unit, unit)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(documented)) {
		if _, ok := exported[name]; !ok {
			t.Errorf("%s is in %s but no component registers it", name, metricsDoc)
		}
	}
}
