package report

import (
	"math"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Values flattens the report into the metrics that expectations and compare
// name (see scenario.Metrics). Metrics the run did not produce are absent.
// It is long on purpose: one put per metric reads as the table of names it is; split, the
// names would scatter over helpers.
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
		for _, arch := range v1beta1.SupportedArchitectures() {
			put(prefix+"boundPods."+arch, float64(p.BoundByArch[arch]))
		}
		for _, os := range scenario.OperatingSystems {
			put(prefix+"boundPods.os."+os, float64(p.BoundByOS[os]))
		}
		put(prefix+"misplacedPods", float64(p.MisplacedPods))
		put(prefix+"gatedAtEnd", float64(p.GatedAtEnd))
		put(prefix+"unboundAtEnd", float64(p.UnboundAtEnd))
		put(prefix+"recorderDrops", float64(p.Recorder.Drops))
		put(prefix+"arrivalLag.max", p.ArrivalLagMaxSeconds)
		if p.CalibrationSeconds > 0 {
			put(prefix+"calibration", p.CalibrationSeconds)
		}
		if x := p.ExecFormat; x != nil {
			put(prefix+"execFormatReportedPods", float64(x.ReportedPods))
			if p.Operator {
				put(prefix+"execFormatDetectedPods", float64(x.DetectedPods))
				put(prefix+"execFormatMissedPods", float64(x.MissedPods))
				put(prefix+"execFormatFalseDetections", float64(x.FalseDetections))
			}
		}
		if len(p.Steps) > 0 {
			put(prefix+"sustainedRate", p.SustainedRate)
		}
		if c := p.Cost; c != nil {
			put(prefix+"cost.cpuPer1kPods", c.CPUSecondsPer1kPods)
			if c.Utilization > 0 {
				put(prefix+"utilization", c.Utilization)
			}
			for _, comp := range c.Components {
				put(prefix+"cost.cpuPer1kPods."+comp.Name, comp.CPUSecondsPer1kPods)
				put(prefix+"cost.peakRSS."+comp.Name, float64(comp.PeakRSSBytes))
				if comp.PeakReplicaRSSBytes > 0 {
					put(prefix+"cost.peakReplicaRSS."+comp.Name, float64(comp.PeakReplicaRSSBytes))
				}
			}
			if len(c.APIRequests) > 0 {
				put(prefix+"cost.apiWritesPerPod", c.APIWritesPerPod)
				put(prefix+"cost.apiRequestsPerPod", c.APIRequestsPerPod)
			}
		}
		if p.Operator {
			put(prefix+"inspectionFailedPods", float64(p.Placements["inspection-failed"]))
			put(prefix+"gateAgeExceededPods", float64(p.Placements["gate-age-exceeded"]))
			put(prefix+"noCommonArchPods", float64(p.Placements["no-common-arch"]))
			put(prefix+"neverGatedPods", float64(p.NeverGatedPods))
			put(prefix+"placedAtAdmissionPods", float64(p.PlacedAtAdmissionPods))
			put(prefix+"fallbackPods", float64(p.FallbackPods))
		}
	}
	pass("", r.Main)
	if a := r.attacker(); a != nil {
		put("attacker.pods", float64(a.Pods))
		put("attacker.boundPods", float64(a.BoundPods))
		put("attacker.gatedAtEnd", float64(a.GatedAtEnd))
		put("attacker.gateHold.max", a.GateHoldMaxSeconds)
		put("attacker.overMaxGateAge", float64(a.OverMaxGateAge))
	}
	pass("baseline.", r.Baseline)
	pass("handwritten.", r.Handwritten)
	for _, ev := range r.Timeline {
		if fo := ev.Failover; fo != nil && fo.ResumedAt >= 0 && ev.Error == "" {
			name := "failover." + fo.Mode
			v[name] = max(v[name], fo.Seconds)
		}
		if g := ev.Registration; g != nil && ev.Error == "" {
			for name, s := range map[string]float64{"failOpen.unregisteredAfter": g.UnregisteredAfter, "failOpen.reregisteredAfter": g.ReregisteredAfter} {
				if s >= 0 {
					v[name] = max(v[name], s)
				}
			}
		}
	}
	for k, x := range r.Ratios {
		put("ratio."+k, x)
	}
	for k, x := range r.HandwrittenRatios {
		put("handwrittenRatio."+k, x)
	}
	for _, o := range []struct {
		name string
		pass *Pass
	}{{"ratio.sustainedRate", r.Baseline}, {"handwrittenRatio.sustainedRate", r.Handwritten}} {
		if r.Main != nil && o.pass != nil && o.pass.SustainedRate > 0 {
			put(o.name, r.Main.SustainedRate/o.pass.SustainedRate)
		}
	}
	// The write-bound ceiling: if the apiserver's writes were all that
	// limited the cluster, the operator's extra write per pod would bind
	// W/(W+1) of the pods per second the scheduler alone binds.
	if b := r.Baseline; b != nil && b.Cost != nil && b.Cost.APIWritesPerPod > 0 {
		w := b.Cost.APIWritesPerPod
		put("ceiling.throughput", w/(w+1))
		if t, ok := r.Ratios["throughput"]; ok {
			put("ratio.throughputOfCeiling", t/(w/(w+1)))
		}
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
		if o.Restarts != nil {
			put("componentRestarts", float64(sumValues(o.Restarts)))
			put("componentOOMKills", float64(sumValues(o.OOMKills)))
		}
	}
	if g := r.Registry; g != nil {
		put("registryRequests", float64(g.Total))
		put("registryMinimumRequests", float64(g.MinimumRequests))
		put("registryProtocolOverhead", float64(g.ProtocolOverhead.Total))
		if g.MinimumRequests > 0 {
			put("registryRequestsPerMinimum", g.PerMinimum)
		}
		if g.UniqueImages > 0 {
			put("registryOverheadPerImage", g.ProtocolOverhead.PerImage)
		}
	}
	if r.Main != nil && r.Main.Admission != nil {
		put("admission.mutatingSecondsPerPod", r.Main.Admission.MutatingSecondsPerPod)
		put("admission.webhookCallsPerPod", r.Main.Admission.WebhookCallsPerPod)
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
		if p.Name == "simulator" || p.Name == ComponentHarness {
			put("peakRSS", float64(p.PeakRSSBytes))
		}
	}
	if len(r.Resources.Processes) > 0 {
		put("cpuTime", cpu)
		put("peakRSSAll", float64(all))
	}
	return v
}

// sumValues adds up the counts of m.
func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
