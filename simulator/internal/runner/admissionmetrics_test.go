package runner

import (
	"strings"
	"testing"

	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/report"
)

func TestAdmissionTotalsOf(t *testing.T) {
	const text = `# TYPE apiserver_admission_step_admission_duration_seconds histogram
apiserver_admission_step_admission_duration_seconds_bucket{operation="CREATE",rejected="false",type="admit",le="+Inf"} 10
apiserver_admission_step_admission_duration_seconds_sum{operation="CREATE",rejected="false",type="admit"} 0.5
apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="admit"} 10
apiserver_admission_step_admission_duration_seconds_bucket{operation="CREATE",rejected="false",type="validate",le="+Inf"} 10
apiserver_admission_step_admission_duration_seconds_sum{operation="CREATE",rejected="false",type="validate"} 9
apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="validate"} 10
apiserver_admission_step_admission_duration_seconds_bucket{operation="UPDATE",rejected="false",type="admit",le="+Inf"} 3
apiserver_admission_step_admission_duration_seconds_sum{operation="UPDATE",rejected="false",type="admit"} 7
apiserver_admission_step_admission_duration_seconds_count{operation="UPDATE",rejected="false",type="admit"} 3
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="gate",operation="CREATE",rejected="false",type="admit",le="+Inf"} 4
apiserver_admission_webhook_admission_duration_seconds_sum{name="gate",operation="CREATE",rejected="false",type="admit"} 0.2
apiserver_admission_webhook_admission_duration_seconds_count{name="gate",operation="CREATE",rejected="false",type="admit"} 4
# TYPE apiserver_admission_controller_admission_duration_seconds histogram
apiserver_admission_controller_admission_duration_seconds_bucket{name="LimitRanger",operation="CREATE",rejected="false",type="admit",le="+Inf"} 13
apiserver_admission_controller_admission_duration_seconds_sum{name="LimitRanger",operation="CREATE",rejected="false",type="admit"} 0.01
apiserver_admission_controller_admission_duration_seconds_count{name="LimitRanger",operation="CREATE",rejected="false",type="admit"} 13
apiserver_admission_controller_admission_duration_seconds_bucket{name="MutatingAdmissionPolicy",operation="CREATE",rejected="false",type="admit",le="+Inf"} 16
apiserver_admission_controller_admission_duration_seconds_sum{name="MutatingAdmissionPolicy",operation="CREATE",rejected="false",type="admit"} 0.02
apiserver_admission_controller_admission_duration_seconds_count{name="MutatingAdmissionPolicy",operation="CREATE",rejected="false",type="admit"} 16
apiserver_admission_controller_admission_duration_seconds_bucket{name="MutatingAdmissionPolicy",operation="CREATE",rejected="false",type="validate",le="+Inf"} 40
apiserver_admission_controller_admission_duration_seconds_sum{name="MutatingAdmissionPolicy",operation="CREATE",rejected="false",type="validate"} 0.02
apiserver_admission_controller_admission_duration_seconds_count{name="MutatingAdmissionPolicy",operation="CREATE",rejected="false",type="validate"} 40
apiserver_admission_controller_admission_duration_seconds_bucket{name="MutatingAdmissionPolicy",operation="UPDATE",rejected="false",type="admit",le="+Inf"} 50
apiserver_admission_controller_admission_duration_seconds_sum{name="MutatingAdmissionPolicy",operation="UPDATE",rejected="false",type="admit"} 0.02
apiserver_admission_controller_admission_duration_seconds_count{name="MutatingAdmissionPolicy",operation="UPDATE",rejected="false",type="admit"} 50
# TYPE apiserver_mutating_admission_policy_check_total counter
apiserver_mutating_admission_policy_check_total{error_type="no_error",policy="p",policy_binding="p"} 6
`
	families, err := operand.ParseFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	got := admissionTotalsOf(families)
	// 10 creates, of which the chain ran twice for 6: the most-called plugin's 16 admit calls.
	want := admissionTotals{mutatingSeconds: 0.5, webhookCalls: 4, webhookSeconds: 0.2, policyChecks: 6, creates: 10, chainRuns: 16}
	if got != want {
		t.Fatalf("admissionTotalsOf = %+v, want %+v", got, want)
	}
	cost := admissionCost(admissionTotals{mutatingSeconds: 0.1, webhookCalls: 2, creates: 2, chainRuns: 2}, got, 4)
	if cost.MutatingSecondsPerPod != 0.1 || cost.WebhookCallsPerPod != 0.5 || cost.PolicyChecksPerPod != 1.5 || cost.ReinvokedPerPod != 1.5 {
		t.Fatalf("admissionCost = %+v", cost)
	}
	if rt := apiserverRuntime(admissionTotals{}, got, 4); rt != nil {
		t.Fatalf("apiserverRuntime without the runtime metrics = %+v, want nil", rt)
	}
}

func TestAPIServerRuntime(t *testing.T) {
	const text = `# TYPE go_gc_heap_allocs_bytes_total counter
go_gc_heap_allocs_bytes_total 5.096e+06
# TYPE go_gc_cycles_total_gc_cycles_total counter
go_gc_cycles_total_gc_cycles_total 12
# TYPE go_cpu_classes_gc_total_cpu_seconds_total counter
go_cpu_classes_gc_total_cpu_seconds_total 3.5
# TYPE go_gc_heap_live_bytes gauge
go_gc_heap_live_bytes 4.194304e+08
`
	families, err := operand.ParseFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	after := admissionTotalsOf(families)
	if after.liveHeapBytes != 400<<20 {
		t.Fatalf("live heap = %v, want the gauge's 400 MiB", after.liveHeapBytes)
	}
	before := admissionTotals{allocBytes: 1e6, gcCycles: 10, gcCPUSeconds: 1.5, liveHeapBytes: 300 << 20, runtimeOK: true}
	got := apiserverRuntime(before, after, 1000)
	want := report.APIServerRuntime{LiveHeapBytesAtStart: 300 << 20, AllocatedBytesPerPod: 4096, GCCycles: 2, GCCPUSecondsPer1kPods: 2}
	if got == nil || *got != want {
		t.Fatalf("apiserverRuntime = %+v, want %+v", got, want)
	}
	partial := admissionTotalsOf(families[:2])
	if rt := apiserverRuntime(before, partial, 1000); rt != nil {
		t.Fatalf("apiserverRuntime with a runtime metric missing = %+v, want nil", rt)
	}
}
