package runner

import (
	"strings"
	"testing"

	"github.com/archgate/archgate/simulator/internal/operand"
)

// TestSchedulerSLIFromTextFormat reads the histogram as a scheduler process
// serves it (the text format lists the +Inf bucket): the count must be the
// pods scheduled, not twice that, and p99 must fall in a finite bucket.
func TestSchedulerSLIFromTextFormat(t *testing.T) {
	text := `# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="0.01"} 50
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="0.1"} 100
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="+Inf"} 100
scheduler_pod_scheduling_sli_duration_seconds_sum{attempts="1"} 2
scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"} 100
`
	families, err := operand.ParseFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	got := sliDelta(nil, schedulerSLI(families))
	if got == nil || got.Count != 100 || got.P99 > 0.1 {
		t.Errorf("SLI %+v, want count 100 and p99 within the 0.1 s bucket", got)
	}
}
