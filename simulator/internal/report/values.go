package report

import (
	"math"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// Values flattens the report into the metrics that expectations and compare
// name (see scenario.Metrics). Metrics the run did not produce are absent.
func (r *Report) Values() map[string]float64 {
	v := values{}
	v.pass("", r.Main)
	v.attacker(r.attacker())
	v.pass("baseline.", r.Baseline)
	v.pass("handwritten.", r.Handwritten)
	v.pass("floor.", r.Floor)
	v.timeline(r.Timeline)
	v.ratios(r)
	v.ceiling(r)
	v.operator(r.Operator)
	v.registry(r.Registry)
	v.mainExtras(r.Main)
	v.put("wallTime", r.WallSeconds)
	v.resources(r.Resources.Processes)
	return v
}

// values is the flattened report being built: one method per part of the report, each a
// table of the metric names that part yields.
type values map[string]float64

// put records a finite value; NaN and infinities mean "not measured".
func (v values) put(name string, x float64) {
	if !math.IsNaN(x) && !math.IsInf(x, 0) {
		v[name] = x
	}
}

// pass records one pass's figures under prefix ("" for the main pass).
func (v values) pass(prefix string, p *Pass) {
	if p == nil {
		return
	}
	v.latencies(prefix, p.Latency)
	v.latencies(prefix+"start.", p.StartLatency)
	v.latencies(prefix+"rest.", p.RestLatency)
	for _, fam := range scenario.WindowFamilies {
		if x, ok := p.TypicalWindowP99(fam); ok {
			v.put(prefix+"typicalWindow."+fam+".p99", x)
		}
		if x, ok := p.StartPenalty(fam); ok {
			v.put(prefix+"startPenalty."+fam, x)
		}
	}
	v.put(prefix+"throughput", p.Throughput)
	v.put(prefix+"pods", float64(p.Pods))
	v.put(prefix+"boundPods", float64(p.BoundPods))
	for _, arch := range v1beta1.SupportedArchitectures() {
		v.put(prefix+"boundPods."+arch, float64(p.BoundByArch[arch]))
	}
	for _, os := range scenario.OperatingSystems {
		v.put(prefix+"boundPods.os."+os, float64(p.BoundByOS[os]))
	}
	v.put(prefix+"misplacedPods", float64(p.MisplacedPods))
	v.put(prefix+"gatedAtEnd", float64(p.GatedAtEnd))
	v.put(prefix+"unboundAtEnd", float64(p.UnboundAtEnd))
	v.put(prefix+"recorderDrops", float64(p.Recorder.Drops))
	v.put(prefix+"arrivalLag.max", p.ArrivalLagMaxSeconds)
	if p.CalibrationSeconds > 0 {
		v.put(prefix+"calibration", p.CalibrationSeconds)
	}
	if len(p.Steps) > 0 {
		v.put(prefix+"sustainedRate", p.SustainedRate)
	}
	v.execFormat(prefix, p)
	v.cost(prefix, p.Cost)
	if g := p.APIServerRuntime; g != nil {
		v.put(prefix+"apiserver.liveHeapAtStart", g.LiveHeapBytesAtStart)
		v.put(prefix+"apiserver.allocatedPerPod", g.AllocatedBytesPerPod)
		v.put(prefix+"apiserver.gcCycles", g.GCCycles)
		v.put(prefix+"apiserver.gcCPUPer1kPods", g.GCCPUSecondsPer1kPods)
	}
	if p.Operator {
		v.put(prefix+"inspectionFailedPods", float64(p.Placements["inspection-failed"]))
		v.put(prefix+"gateAgeExceededPods", float64(p.Placements["gate-age-exceeded"]))
		v.put(prefix+"noCommonArchPods", float64(p.Placements["no-common-arch"]))
		v.put(prefix+"neverGatedPods", float64(p.NeverGatedPods))
		v.put(prefix+"placedAtAdmissionPods", float64(p.PlacedAtAdmissionPods))
		v.put(prefix+"fallbackPods", float64(p.FallbackPods))
	}
}

// latencies records each latency family that has samples under prefix.
func (v values) latencies(prefix string, l map[string]stats.Summary) {
	for fam, s := range l {
		if s.N == 0 {
			continue
		}
		for _, st := range scenario.LatencyStats {
			v.put(prefix+fam+"."+st, s.Get(st))
		}
	}
}

// execFormat records a pass's exec-format-error detection; detection figures only where
// the operator ran.
func (v values) execFormat(prefix string, p *Pass) {
	x := p.ExecFormat
	if x == nil {
		return
	}
	v.put(prefix+"execFormatReportedPods", float64(x.ReportedPods))
	if p.Operator {
		v.put(prefix+"execFormatDetectedPods", float64(x.DetectedPods))
		v.put(prefix+"execFormatMissedPods", float64(x.MissedPods))
		v.put(prefix+"execFormatFalseDetections", float64(x.FalseDetections))
	}
}

// cost records a pass's CPU, memory and apiserver requests per pod.
func (v values) cost(prefix string, c *Cost) {
	if c == nil {
		return
	}
	v.put(prefix+"cost.cpuPer1kPods", c.CPUSecondsPer1kPods)
	v.put(prefix+"cost.relativeCPU", c.RelativeCPU())
	if c.Utilization > 0 {
		v.put(prefix+"utilization", c.Utilization)
	}
	for _, comp := range c.Components {
		v.put(prefix+"cost.cpuPer1kPods."+comp.Name, comp.CPUSecondsPer1kPods)
		v.put(prefix+"cost.peakRSS."+comp.Name, float64(comp.PeakRSSBytes))
		if comp.PeakReplicaRSSBytes > 0 {
			v.put(prefix+"cost.peakReplicaRSS."+comp.Name, float64(comp.PeakReplicaRSSBytes))
		}
	}
	if len(c.APIRequests) > 0 {
		v.put(prefix+"cost.apiWritesPerPod", c.APIWritesPerPod)
		v.put(prefix+"cost.apiRequestsPerPod", c.APIRequestsPerPod)
	}
}

// attacker records the hostile tenant's pods, where the scenario has one.
func (v values) attacker(a *Attacker) {
	if a == nil {
		return
	}
	v.put("attacker.pods", float64(a.Pods))
	v.put("attacker.boundPods", float64(a.BoundPods))
	v.put("attacker.gatedAtEnd", float64(a.GatedAtEnd))
	v.put("attacker.gateHold.max", a.GateHoldMaxSeconds)
	v.put("attacker.overMaxGateAge", float64(a.OverMaxGateAge))
}

// timeline records the slowest failover per mode and the webhook's fail-open times, over
// the steps that succeeded.
func (v values) timeline(events []AppliedEvent) {
	for _, ev := range events {
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
}

// ratios records the main pass against the scheduler alone, the handwritten pass and the floor.
func (v values) ratios(r *Report) {
	for k, x := range r.Ratios {
		v.put("ratio."+k, x)
	}
	for k, x := range r.HandwrittenRatios {
		v.put("handwrittenRatio."+k, x)
	}
	for k, x := range r.FloorRatios {
		v.put("floorRatio."+k, x)
	}
	for _, o := range []struct {
		name string
		pass *Pass
	}{{"ratio.sustainedRate", r.Baseline}, {"handwrittenRatio.sustainedRate", r.Handwritten}, {"floorRatio.sustainedRate", r.Floor}} {
		if r.Main != nil && o.pass != nil && o.pass.SustainedRate > 0 {
			v.put(o.name, r.Main.SustainedRate/o.pass.SustainedRate)
		}
	}
}

// ceiling records the write-bound ceiling: if the apiserver's writes were all that limited
// the cluster, the operator's extra write per pod would bind W/(W+1) of the pods per second
// the scheduler alone binds.
func (v values) ceiling(r *Report) {
	b := r.Baseline
	if b == nil || b.Cost == nil || b.Cost.APIWritesPerPod <= 0 {
		return
	}
	w := b.Cost.APIWritesPerPod
	v.put("ceiling.throughput", w/(w+1))
	if t, ok := r.Ratios["throughput"]; ok {
		v.put("ratio.throughputOfCeiling", t/(w/(w+1)))
	}
}

// operator records the operator's cache, inspection errors and restarts.
func (v values) operator(o *OperatorStats) {
	if o == nil {
		return
	}
	if o.CacheHits+o.CacheMisses > 0 {
		v.put("cacheHitRate", o.CacheHitRate)
	}
	var errs float64
	for _, n := range o.InspectionErrors {
		errs += n
	}
	v.put("inspectionErrors", errs)
	if o.Restarts != nil {
		v.put("componentRestarts", float64(sumValues(o.Restarts)))
		v.put("componentOOMKills", float64(sumValues(o.OOMKills)))
	}
}

// registry records the registry's requests against the minimum the images need.
func (v values) registry(g *RegistryStats) {
	if g == nil {
		return
	}
	v.put("registryRequests", float64(g.Total))
	v.put("registryMinimumRequests", float64(g.MinimumRequests))
	v.put("registryProtocolOverhead", float64(g.ProtocolOverhead.Total))
	if g.MinimumRequests > 0 {
		v.put("registryRequestsPerMinimum", g.PerMinimum)
	}
	if g.UniqueImages > 0 {
		v.put("registryOverheadPerImage", g.ProtocolOverhead.PerImage)
	}
}

// mainExtras records the main pass's apiserver admission cost and scheduler SLI.
func (v values) mainExtras(m *Pass) {
	if m == nil {
		return
	}
	if a := m.Admission; a != nil {
		v.put("admission.mutatingSecondsPerPod", a.MutatingSecondsPerPod)
		v.put("admission.webhookCallsPerPod", a.WebhookCallsPerPod)
	}
	if s := m.SchedulerSLI; s != nil {
		v.put("schedulerSLI.p50", s.P50)
		v.put("schedulerSLI.p99", s.P99)
	}
}

// resources records the run's CPU time and peak memory over every process.
func (v values) resources(procs []ProcessStats) {
	var cpu float64
	var all int64
	for _, p := range procs {
		cpu += p.CPUSeconds
		all += p.PeakRSSBytes
		if p.Name == "simulator" || p.Name == ComponentHarness {
			v.put("peakRSS", float64(p.PeakRSSBytes))
		}
	}
	if len(procs) > 0 {
		v.put("cpuTime", cpu)
		v.put("peakRSSAll", float64(all))
	}
}

// sumValues adds up the counts of m.
func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
