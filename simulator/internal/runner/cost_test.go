package runner

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// apiserverCounts are the counters of a test /metrics fragment.
type apiserverCounts struct {
	creates, patches, bindings, watchEvents float64
}

// apiserverMetrics is a fragment of kube-apiserver's /metrics with the counts c.
func apiserverMetrics(c apiserverCounts) string {
	creates, patches, bindings, watchEvents := c.creates, c.patches, c.bindings, c.watchEvents
	return strings.Join([]string{
		"# TYPE apiserver_request_total counter",
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} ` + ftoa(creates),
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="PATCH",version="v1"} ` + ftoa(patches),
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} ` + ftoa(bindings),
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 7`,
		"# TYPE apiserver_watch_events_total counter",
		`apiserver_watch_events_total{group="",kind="Pod",resource="pods",version="v1"} ` + ftoa(watchEvents),
		"# TYPE apiserver_watch_events_sizes histogram",
		`apiserver_watch_events_sizes_bucket{group="",kind="Pod",resource="pods",version="v1",le="+Inf"} ` + ftoa(watchEvents),
		`apiserver_watch_events_sizes_sum{group="",kind="Pod",resource="pods",version="v1"} ` + ftoa(watchEvents*2048),
		`apiserver_watch_events_sizes_count{group="",kind="Pod",resource="pods",version="v1"} ` + ftoa(watchEvents),
		"",
	}, "\n")
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func TestCostPerPass(t *testing.T) {
	parse := func(text string) map[string]float64 {
		fam, err := operand.ParseFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return apiCounters(fam)
	}
	sec := time.Second
	start := costMark{
		sample: procs.Sample{At: 10 * sec, CPU: map[string]time.Duration{"kube-apiserver": 100 * sec, "controller": 5 * sec, procs.SelfName: 20 * sec, report.ComponentBackground: 50 * sec}},
		api:    parse(apiserverMetrics(apiserverCounts{creates: 500, patches: 100, bindings: 400, watchEvents: 3000})),
	}
	end := costMark{
		sample: procs.Sample{At: 110 * sec, CPU: map[string]time.Duration{"kube-apiserver": 180 * sec, "controller": 15 * sec, procs.SelfName: 30 * sec, report.ComponentBackground: 75 * sec}},
		api:    parse(apiserverMetrics(apiserverCounts{creates: 10500, patches: 10100, bindings: 10400, watchEvents: 113000})),
	}
	samples := []procs.Sample{
		{At: 5 * sec, RSS: map[string]int64{"controller": 900}, ReplicaRSS: map[string]int64{"controller": 900}}, // before the pass: not its peak
		// Two controller replicas: the sum peaks at 100 s, the largest replica at 50 s.
		{At: 50 * sec, RSS: map[string]int64{"controller": 300, "kube-apiserver": 2000}, ReplicaRSS: map[string]int64{"controller": 250, "kube-apiserver": 2000}},
		{At: 100 * sec, RSS: map[string]int64{"controller": 400, "kube-apiserver": 1000}, ReplicaRSS: map[string]int64{"controller": 200, "kube-apiserver": 1000}},
	}
	r := &run{s: &scenario.Scenario{Operator: scenario.OperatorSpec{Enabled: true}},
		opts: Options{Archgate: "archgate", SchedulerCommand: []string{"simulator"}}}
	c := r.cost(start, end, samples, 10000)

	want := map[string]struct {
		cpuPer1k          float64
		peak, replicaPeak int64
	}{
		"kube-apiserver":           {8, 2000, 2000},
		"controller":               {1, 400, 250},
		report.ComponentHarness:    {1, 0, 0},
		report.ComponentBackground: {2.5, 0, 0},
	}
	for name, w := range want {
		got, ok := c.Component(name)
		if !ok {
			t.Errorf("component %s missing (have %+v)", name, c.Components)
			continue
		}
		if got.CPUSecondsPer1kPods != w.cpuPer1k || got.PeakRSSBytes != w.peak || got.PeakReplicaRSSBytes != w.replicaPeak {
			t.Errorf("%s: cpu/1k %v peak %d replica peak %d, want %v, %d and %d", name,
				got.CPUSecondsPer1kPods, got.PeakRSSBytes, got.PeakReplicaRSSBytes, w.cpuPer1k, w.peak, w.replicaPeak)
		}
	}
	// The background load is listed but not counted in the total.
	if c.CPUSecondsPer1kPods != 10 {
		t.Errorf("total CPU per 1k pods = %v, want 10 (8 + 1 + 1, background aside)", c.CPUSecondsPer1kPods)
	}
	if c.APIWritesPerPod != 3 || c.APIRequestsPerPod != 3 {
		t.Errorf("writes %v requests %v per pod, want 3 and 3 (the LIST did not change)", c.APIWritesPerPod, c.APIRequestsPerPod)
	}
	if c.WatchEventsPerPod != 11 || c.WatchBytesPerPod != 11*2048 {
		t.Errorf("watch events %v bytes %v per pod, want 11 and %d", c.WatchEventsPerPod, c.WatchBytesPerPod, 11*2048)
	}
	if c.APIRequests[0].Resource != "pods" || c.APIRequests[0].Verb != "PATCH" {
		t.Errorf("requests sorted by resource then verb, first = %+v", c.APIRequests[0])
	}
}
