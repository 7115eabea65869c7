package runner

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
)

// costMark is what every component had used at one instant: the start or
// the end of a pass. The difference of two marks is the pass's cost.
type costMark struct {
	sample procs.Sample
	// api holds the apiserver's request counters (apiserver_request_total,
	// by verb and resource[/subresource]) and watch counters
	// (apiserver_watch_events_total and _sizes_sum, by resource).
	api map[string]float64
}

// markCost takes a mark now.
func (r *run) markCost(ctx context.Context) costMark {
	return costMark{sample: r.sampler.Sample(), api: r.apiserverCounters(ctx)}
}

// apiserverCounters scrapes the apiserver's /metrics; nil when it cannot
// (an existing cluster may forbid it).
func (r *run) apiserverCounters(ctx context.Context) map[string]float64 {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := r.kube.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	families, err := operand.ParseFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	return apiCounters(families)
}

// apiCounters keeps the request and watch counters, keyed
// "request VERB resource[/subresource]", "watchEvents resource" and
// "watchBytes resource".
func apiCounters(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			l := labels(m)
			switch f.GetName() {
			case "apiserver_request_total":
				res := l["resource"]
				if l["subresource"] != "" {
					res += "/" + l["subresource"]
				}
				out["request "+l["verb"]+" "+res] += m.GetCounter().GetValue()
			case "apiserver_watch_events_total":
				out["watchEvents "+l["resource"]] += m.GetCounter().GetValue()
			case "apiserver_watch_events_sizes":
				out["watchBytes "+l["resource"]] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// writeVerbs are the request verbs that change objects.
var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "APPLY", "CREATE", "UPDATE", "DELETECOLLECTION"}

// cost is the pass's cost between two marks, for pods pods. Components are
// the processes the sampler reports (the control plane, the components run
// as processes, and the simulator itself as the harness).
func (r *run) cost(start, end costMark, samples []procs.Sample, pods int) *report.Cost {
	if pods == 0 {
		return nil
	}
	per1k := 1000 / float64(pods)
	c := &report.Cost{Pods: pods, Utilization: procs.Utilization(start.sample, end.sample)}
	for name, cpu := range end.sample.CPU {
		d := (cpu - start.sample.CPU[name]).Seconds()
		var peak, replicaPeak int64
		for _, s := range samples {
			if s.At >= start.sample.At && s.At <= end.sample.At {
				peak = max(peak, s.RSS[name])
				replicaPeak = max(replicaPeak, s.ReplicaRSS[name])
			}
		}
		c.Components = append(c.Components, report.ComponentCost{
			Name: r.componentName(name), CPUSeconds: d, CPUSecondsPer1kPods: d * per1k, PeakRSSBytes: peak, PeakReplicaRSSBytes: replicaPeak,
		})
		if name != report.ComponentBackground {
			c.CPUSecondsPer1kPods += d * per1k
		}
	}
	slices.SortFunc(c.Components, func(a, b report.ComponentCost) int { return report.CompareComponents(a.Name, b.Name) })
	if start.api == nil || end.api == nil {
		return c
	}
	perPod := 1 / float64(pods)
	for k, v := range end.api {
		d := v - start.api[k]
		if d <= 0 {
			continue
		}
		kind, rest, _ := strings.Cut(k, " ")
		switch kind {
		case "request":
			verb, res, _ := strings.Cut(rest, " ")
			c.APIRequests = append(c.APIRequests, report.APIRequestCount{Verb: verb, Resource: res, Count: d, PerPod: d * perPod})
			c.APIRequestsPerPod += d * perPod
			if slices.Contains(writeVerbs, verb) {
				c.APIWritesPerPod += d * perPod
			}
		case "watchEvents":
			c.WatchEventsPerPod += d * perPod
		case "watchBytes":
			c.WatchBytesPerPod += d * perPod
		}
	}
	slices.SortFunc(c.APIRequests, func(a, b report.APIRequestCount) int {
		return strings.Compare(a.Resource+" "+a.Verb, b.Resource+" "+b.Verb)
	})
	return c
}

// componentName is the report's name of a sampled process: the simulator
// process is the harness (recorder, load generator, fake registry) when the
// scheduler and the operator run as processes of their own.
func (r *run) componentName(sampled string) string {
	if sampled == procs.SelfName && r.opts.SchedulerCommand != nil && (r.opts.Archgate != "" || !r.s.Operator.Enabled) {
		return report.ComponentHarness
	}
	return sampled
}
