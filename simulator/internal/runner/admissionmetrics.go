package runner

import (
	"bytes"
	"context"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes"

	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/report"
)

// The apiserver's admission metrics the passes compare.
const (
	admissionStepMetric    = "apiserver_admission_step_admission_duration_seconds"
	admissionWebhookMetric = "apiserver_admission_webhook_admission_duration_seconds"
	policyCheckMetric      = "apiserver_mutating_admission_policy_check_total"
	// admissionPluginMetric is observed for each call of each built-in plugin, the
	// mutating chain's second run included (a webhook or policy that changes the object makes
	// the apiserver run every built-in mutating plugin again); the step metric once per request.
	admissionPluginMetric = "apiserver_admission_controller_admission_duration_seconds"
)

// The apiserver's Go runtime metrics (runtime/metrics, which component-base exports whole):
// what the apiserver allocates, how often it collects, and the CPU its collector takes. A pass
// that allocates more in the apiserver (an admission policy's JSON round trip and CEL
// evaluation, say) collects more often, and on a small machine each collection of a large heap
// is a second in which every request waits longer.
const (
	heapAllocsMetric = "go_gc_heap_allocs_bytes_total"
	gcCyclesMetric   = "go_gc_cycles_total_gc_cycles_total"
	gcCPUMetric      = "go_cpu_classes_gc_total_cpu_seconds_total"
	// liveHeapMetric is the heap the last collection marked live: read right after the
	// collection each pass starts with, what the apiserver carries into the pass.
	liveHeapMetric = "go_gc_heap_live_bytes"
)

// admissionTotals are the apiserver's cumulative admission figures at one moment.
type admissionTotals struct {
	mutatingSeconds, webhookCalls, webhookSeconds, policyChecks float64
	// creates counts the CREATE requests through the mutating step; chainRuns the runs of its
	// built-in plugins, read from the plugin called most often (one that handles every CREATE).
	creates, chainRuns float64
	// allocBytes, gcCycles and gcCPUSeconds are the apiserver's Go runtime totals and
	// liveHeapBytes its live heap after the last collection; runtimeOK says the apiserver
	// exported all four.
	allocBytes, gcCycles, gcCPUSeconds, liveHeapBytes float64
	runtimeOK                                         bool
}

// apiserverAdmission scrapes the apiserver's /metrics; ok is false when it cannot (the pass then
// reports no admission figures).
func (r *run) apiserverAdmission(ctx context.Context) (admissionTotals, bool) {
	cs, err := kubernetes.NewForConfig(r.kube.cfg)
	if err != nil {
		return admissionTotals{}, false
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return admissionTotals{}, false
	}
	families, err := operand.ParseFamilies(bytes.NewReader(raw))
	if err != nil {
		return admissionTotals{}, false
	}
	return admissionTotalsOf(families), true
}

// admissionTotalsOf sums the CREATE requests' mutating admission time, webhook calls and policy
// checks, and reads the apiserver's runtime totals.
func admissionTotalsOf(families []*dto.MetricFamily) admissionTotals {
	var t admissionTotals
	pluginCalls := map[string]float64{}
	runtime := map[string]*float64{heapAllocsMetric: &t.allocBytes, gcCyclesMetric: &t.gcCycles, gcCPUMetric: &t.gcCPUSeconds, liveHeapMetric: &t.liveHeapBytes}
	read := 0
	for _, f := range families {
		if x, ok := runtime[f.GetName()]; ok && len(f.GetMetric()) == 1 {
			m := f.GetMetric()[0]
			switch f.GetType() {
			case dto.MetricType_GAUGE:
				*x = m.GetGauge().GetValue()
			default:
				*x = m.GetCounter().GetValue()
			}
			read++
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			admitCreate := labels["type"] == "admit" && labels["operation"] == "CREATE"
			switch f.GetName() {
			case admissionStepMetric:
				if admitCreate {
					t.mutatingSeconds += m.GetHistogram().GetSampleSum()
					t.creates += float64(m.GetHistogram().GetSampleCount())
				}
			case admissionPluginMetric:
				if admitCreate {
					pluginCalls[labels["name"]] += float64(m.GetHistogram().GetSampleCount())
				}
			case admissionWebhookMetric:
				if admitCreate {
					t.webhookCalls += float64(m.GetHistogram().GetSampleCount())
					t.webhookSeconds += m.GetHistogram().GetSampleSum()
				}
			case policyCheckMetric:
				t.policyChecks += m.GetCounter().GetValue()
			}
		}
	}
	for _, n := range pluginCalls {
		t.chainRuns = max(t.chainRuns, n)
	}
	t.runtimeOK = read == len(runtime)
	return t
}

// admissionCost is the pass's share of the totals, per pod created.
func admissionCost(before, after admissionTotals, pods int) *report.AdmissionCost {
	if pods == 0 {
		return nil
	}
	n := float64(pods)
	return &report.AdmissionCost{
		MutatingSecondsPerPod: (after.mutatingSeconds - before.mutatingSeconds) / n,
		WebhookCallsPerPod:    (after.webhookCalls - before.webhookCalls) / n,
		WebhookSecondsPerPod:  (after.webhookSeconds - before.webhookSeconds) / n,
		PolicyChecksPerPod:    (after.policyChecks - before.policyChecks) / n,
		ReinvokedPerPod:       max((after.chainRuns-before.chainRuns)-(after.creates-before.creates), 0) / n,
	}
}

// apiserverRuntime is the pass's share of the apiserver's runtime totals; nil when either
// reading lacks them.
func apiserverRuntime(before, after admissionTotals, pods int) *report.APIServerRuntime {
	if pods == 0 || !before.runtimeOK || !after.runtimeOK {
		return nil
	}
	n := float64(pods)
	return &report.APIServerRuntime{
		LiveHeapBytesAtStart:  before.liveHeapBytes,
		AllocatedBytesPerPod:  (after.allocBytes - before.allocBytes) / n,
		GCCycles:              after.gcCycles - before.gcCycles,
		GCCPUSecondsPer1kPods: (after.gcCPUSeconds - before.gcCPUSeconds) / n * 1000,
	}
}
