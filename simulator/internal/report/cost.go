package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Component names of the cost accounting, besides the processes'
// own: kube-apiserver, etcd, and "simulator" when components run in-process.
const (
	ComponentScheduler = "scheduler"
	// ComponentControllerManager is kube-controller-manager (controllerManager: true).
	ComponentControllerManager = "kube-controller-manager"
	ComponentWebhook           = "webhook"
	ComponentController        = "controller"
	// ComponentHarness is the simulator's own process when every measured
	// component runs as a process: recorder, load generator, fake registry.
	ComponentHarness = "harness"
	// ComponentBackground is the scenario's deliberate background load: it
	// is listed but not counted in a pass's total.
	ComponentBackground = "background"
)

// componentOrder is the order components are listed in: the components
// expectations may name (scenario.CostComponents), then the background load.
var componentOrder = append(slices.Clone(scenario.CostComponents), ComponentBackground)

// CompareComponents orders component names: control plane, scheduler,
// operator, harness; unknown names last, by name.
func CompareComponents(a, b string) int {
	ia, ib := slices.Index(componentOrder, a), slices.Index(componentOrder, b)
	if ia < 0 {
		ia = len(componentOrder)
	}
	if ib < 0 {
		ib = len(componentOrder)
	}
	return cmp.Or(cmp.Compare(ia, ib), cmp.Compare(a, b))
}

// Cost is what a pass cost the machine and the apiserver, from the
// components' CPU and memory and the apiserver's own counters, measured
// between the pass's first create and its end.
type Cost struct {
	// Pods is the number of pods the figures are normalised by.
	Pods int `json:"pods"`
	// Components lists each process's CPU and peak RSS over the pass.
	Components []ComponentCost `json:"components"`
	// CPUSecondsPer1kPods is the sum over components.
	CPUSecondsPer1kPods float64 `json:"cpuSecondsPer1kPods"`
	// Utilization is the share of the machine's CPU (all cores, every
	// process, other work included) busy over the pass, from /proc/stat.
	// Above the scenario's headroom its latencies measure queueing.
	Utilization float64 `json:"utilization,omitempty"`
	// APIRequests counts the apiserver's requests by verb and
	// resource[/subresource] (apiserver_request_total deltas).
	APIRequests []APIRequestCount `json:"apiRequests,omitempty"`
	// APIRequestsPerPod and APIWritesPerPod (POST, PUT, PATCH, DELETE) per pod.
	APIRequestsPerPod float64 `json:"apiRequestsPerPod"`
	APIWritesPerPod   float64 `json:"apiWritesPerPod"`
	// WatchEventsPerPod and WatchBytesPerPod are the watch events the
	// apiserver sent (every watcher, every resource) per pod, and their bytes.
	WatchEventsPerPod float64 `json:"watchEventsPerPod"`
	WatchBytesPerPod  float64 `json:"watchBytesPerPod"`
}

// ComponentCost is one component's use of the machine over a pass.
type ComponentCost struct {
	// Name is the component.
	Name string `json:"name"`
	// CPUSeconds is user+system CPU over the pass; per 1,000 pods too.
	CPUSeconds          float64 `json:"cpuSeconds"`
	CPUSecondsPer1kPods float64 `json:"cpuSecondsPer1kPods"`
	// PeakRSSBytes is the highest resident memory sampled during the pass,
	// summed over the component's processes (its replicas in operator mode).
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// PeakReplicaRSSBytes is the highest resident memory of any one of the
	// component's processes during the pass: a replica's footprint.
	PeakReplicaRSSBytes int64 `json:"peakReplicaRSSBytes,omitempty"`
}

// APIRequestCount is one verb on one resource.
type APIRequestCount struct {
	Verb     string  `json:"verb"`
	Resource string  `json:"resource"`
	Count    float64 `json:"count"`
	PerPod   float64 `json:"perPod"`
}

// RelativeCPU is the CPU of every component but the harness in units of the
// harness's own CPU over the pass; NaN when the harness was not measured
// apart (components in-process).
//
// At a fixed arrival rate the harness does the same work in every pass (it
// creates, watches and records the same pods over the same time), so its CPU
// is the machine's speed over that very pass. A host that slows scales every
// process's CPU alike and leaves this figure where it was: across 63 stored
// runs of 10k-pods, the handwritten pass's CPU per pod read ×1.04–1.48 of the
// scheduler-alone pass's, and its RelativeCPU ×1.06–1.20. The SHA-256
// calibration cannot do this: it runs before the pass, for seconds, in the
// CPU's caches, while the cluster's work is memory-bound and the host moves
// within minutes. In a burst the passes last as long as their throughput
// makes them, and the harness's time-bound work (sampling, progress) with
// them, so there the figure is not comparable between passes.
func (c *Cost) RelativeCPU() float64 {
	h, ok := c.Component(ComponentHarness)
	if !ok || h.CPUSecondsPer1kPods <= 0 {
		return math.NaN()
	}
	return (c.CPUSecondsPer1kPods - h.CPUSecondsPer1kPods) / h.CPUSecondsPer1kPods
}

// Component returns the named component's cost, if measured.
func (c *Cost) Component(name string) (ComponentCost, bool) {
	if c == nil {
		return ComponentCost{}, false
	}
	i := slices.IndexFunc(c.Components, func(x ComponentCost) bool { return x.Name == name })
	if i < 0 {
		return ComponentCost{}, false
	}
	return c.Components[i], true
}

// costPasses returns the passes that carry a cost, main first.
func (r *Report) costPasses() []*Pass {
	var out []*Pass
	for _, p := range r.Passes() {
		if p.Cost != nil {
			out = append(out, p)
		}
	}
	return out
}

// costView is the cost section of the summary: CPU per 1,000 pods and peak
// RSS per component and pass (and main / baseline with two passes), then
// apiserver requests per pod.
type costView struct {
	Passes     []string
	Ratio      bool
	Components []summaryRow
	All        summaryRow
	// Relative is RelativeCPU per pass, and its ratio: the cost the host's speed does not move.
	Relative summaryRow
	API      []summaryRow
}

// costSummary builds the cost section; nil when no pass has a cost.
func (r *Report) costSummary() *costView {
	passes := r.costPasses()
	if len(passes) == 0 {
		return nil
	}
	v := &costView{Ratio: len(passes) == 2}
	for _, p := range passes {
		v.Passes = append(v.Passes, p.Name)
	}
	ratio := func(cpus []float64) []string {
		if !v.Ratio {
			return nil
		}
		return []string{ratioText(cpus[0], cpus[1])}
	}
	for _, name := range componentNames(passes) {
		row := summaryRow{Label: name}
		var cpus []float64
		for _, p := range passes {
			c, ok := p.Cost.Component(name)
			if !ok {
				row.Cells = append(row.Cells, "—", "—")
				cpus = append(cpus, 0)
				continue
			}
			cpus = append(cpus, c.CPUSecondsPer1kPods)
			row.Cells = append(row.Cells, fmt.Sprintf("%.2fs", c.CPUSecondsPer1kPods), rssText(c))
		}
		row.Cells = append(row.Cells, ratio(cpus)...)
		v.Components = append(v.Components, row)
	}
	v.All = summaryRow{Label: "**all**"}
	var totals []float64
	for _, p := range passes {
		totals = append(totals, p.Cost.CPUSecondsPer1kPods)
		v.All.Cells = append(v.All.Cells, fmt.Sprintf("**%.2fs**", p.Cost.CPUSecondsPer1kPods), "")
	}
	for _, t := range ratio(totals) {
		v.All.Cells = append(v.All.Cells, "**"+t+"**")
	}
	v.Relative = summaryRow{Label: "all but the harness, in harness CPU-seconds (speed-corrected)"}
	var rel []float64
	for _, p := range passes {
		x := p.Cost.RelativeCPU()
		rel = append(rel, x)
		v.Relative.Cells = append(v.Relative.Cells, relativeText(x), "")
	}
	v.Relative.Cells = append(v.Relative.Cells, ratio(rel)...)
	api := func(label string, get func(*Cost) float64) {
		row := summaryRow{Label: label}
		for _, p := range passes {
			row.Cells = append(row.Cells, fmt.Sprintf("%.2f", get(p.Cost)))
		}
		v.API = append(v.API, row)
	}
	api("**writes**", func(c *Cost) float64 { return c.APIWritesPerPod })
	api("requests", func(c *Cost) float64 { return c.APIRequestsPerPod })
	for _, k := range requestKeys(passes) {
		api(k, func(c *Cost) float64 { return c.requestsPerPod(k) })
	}
	api("watch events sent", func(c *Cost) float64 { return c.WatchEventsPerPod })
	api("watch KiB sent", func(c *Cost) float64 { return c.WatchBytesPerPod / 1024 })
	return v
}

// writeCostText writes one line per pass: CPU per 1,000 pods by component
// and apiserver writes per pod.
func (r *Report) writeCostText(w io.Writer) {
	for _, p := range r.costPasses() {
		fmt.Fprintf(w, "%-8s cost per 1k pods: %.1f CPU-s (", p.Name, p.Cost.CPUSecondsPer1kPods)
		for i, c := range p.Cost.Components {
			if i > 0 {
				fmt.Fprint(w, ", ")
			}
			fmt.Fprintf(w, "%s %.1f", c.Name, c.CPUSecondsPer1kPods)
		}
		fmt.Fprintf(w, "); apiserver %.2f writes, %.2f requests, %.1f watch events per pod; machine %.0f%% busy\n",
			p.Cost.APIWritesPerPod, p.Cost.APIRequestsPerPod, p.Cost.WatchEventsPerPod, 100*p.Cost.Utilization)
		if len(p.Steps) > 0 {
			fmt.Fprintf(w, "%-8s sustained %.0f pods/s (total p99 within the scenario's sustainLatency)\n", p.Name, p.SustainedRate)
		}
	}
}

// rssText is a component's peak RSS, and its largest replica's when the
// component ran as several processes.
func rssText(c ComponentCost) string {
	sum := FormatBytes(float64(c.PeakRSSBytes))
	if c.PeakReplicaRSSBytes <= 0 || c.PeakReplicaRSSBytes >= c.PeakRSSBytes {
		return sum
	}
	return sum + " (one replica " + FormatBytes(float64(c.PeakReplicaRSSBytes)) + ")"
}

// relativeText is a RelativeCPU figure: "×14.2", or "—" when not measured.
func relativeText(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("×%.2f", x)
}

func ratioText(a, b float64) string {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "—"
	}
	return fmt.Sprintf("×%.2f", a/b)
}

// componentNames lists the components of any pass, in report order.
func componentNames(passes []*Pass) []string {
	var names []string
	for _, p := range passes {
		for _, c := range p.Cost.Components {
			if !slices.Contains(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	slices.SortFunc(names, CompareComponents)
	return names
}

// requestKeys lists "VERB resource" of the requests of any pass that reach
// 0.01 per pod, sorted.
func requestKeys(passes []*Pass) []string {
	var keys []string
	for _, p := range passes {
		for _, a := range p.Cost.APIRequests {
			k := a.Verb + " " + a.Resource
			if a.PerPod >= 0.01 && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// requestsPerPod returns the per-pod count of "VERB resource".
func (c *Cost) requestsPerPod(key string) float64 {
	for _, a := range c.APIRequests {
		if a.Verb+" "+a.Resource == key {
			return a.PerPod
		}
	}
	return 0
}
