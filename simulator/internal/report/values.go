package report

import (
	"math"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Values flattens the report into the metrics that expectations and compare
// name (see scenario.Metrics). Metrics the run did not produce are absent.
func (r *Report) Values() map[string]float64 {
	v := map[string]float64{}
	put := func(name string, x float64) {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v[name] = x
		}
	}
	pass := func(prefix string, p *Pass) {
		if p == nil {
			return
		}
		for fam, s := range p.Latency {
			if s.N == 0 {
				continue
			}
			for _, st := range scenario.LatencyStats {
				put(prefix+fam+"."+st, s.Get(st))
			}
		}
		put(prefix+"throughput", p.Throughput)
		put(prefix+"pods", float64(p.Pods))
		put(prefix+"boundPods", float64(p.BoundPods))
		put(prefix+"misplacedPods", float64(p.MisplacedPods))
		put(prefix+"gatedAtEnd", float64(p.GatedAtEnd))
		put(prefix+"unboundAtEnd", float64(p.UnboundAtEnd))
		put(prefix+"recorderDrops", float64(p.Recorder.Drops))
		put(prefix+"arrivalLag.max", p.ArrivalLagMaxSeconds)
		if p.Operator {
			put(prefix+"inspectionFailedPods", float64(p.Placements["inspection-failed"]))
			put(prefix+"noCommonArchPods", float64(p.Placements["no-common-arch"]))
			put(prefix+"neverGatedPods", float64(p.NeverGatedPods))
		}
	}
	pass("", r.Main)
	pass("baseline.", r.Baseline)
	for k, x := range r.Ratios {
		put("ratio."+k, x)
	}
	if o := r.Operator; o != nil {
		if o.CacheHits+o.CacheMisses > 0 {
			put("cacheHitRate", o.CacheHitRate)
		}
		var errs float64
		for _, n := range o.InspectionErrors {
			errs += n
		}
		put("inspectionErrors", errs)
	}
	if g := r.Registry; g != nil {
		put("registryRequests", float64(g.Total))
		put("registryMinimumRequests", float64(g.MinimumRequests))
		if g.MinimumRequests > 0 {
			put("registryRequestsPerMinimum", g.PerMinimum)
		}
	}
	if r.Main != nil && r.Main.SchedulerSLI != nil {
		put("schedulerSLI.p50", r.Main.SchedulerSLI.P50)
		put("schedulerSLI.p99", r.Main.SchedulerSLI.P99)
	}
	put("wallTime", r.WallSeconds)
	var cpu float64
	var all int64
	for _, p := range r.Resources.Processes {
		cpu += p.CPUSeconds
		all += p.PeakRSSBytes
		if p.Name == "simulator" {
			put("peakRSS", float64(p.PeakRSSBytes))
		}
	}
	if len(r.Resources.Processes) > 0 {
		put("cpuTime", cpu)
		put("peakRSSAll", float64(all))
	}
	return v
}
