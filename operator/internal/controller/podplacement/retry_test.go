package podplacement

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
)

// TestDefaultRetryBudgetRidesOutAMinute: with the API's default retry budget and the
// controller's default backoff, a pod whose images keep failing is retried for at least a minute
// before it is released unplaced — an ordinary registry blip releases nothing.
func TestDefaultRetryBudgetRidesOutAMinute(t *testing.T) {
	tracker := newRetryTracker(cmdline.DefaultRetryBaseDelay, cmdline.DefaultRetryMaxDelay, clocktesting.NewFakePassiveClock(time.Now()))
	const uid = types.UID("pod")
	var total time.Duration
	var schedule []time.Duration
	for {
		delay, exhausted := tracker.Failed(uid, v1beta1.DefaultImageInspectionMaxRetries)
		if exhausted {
			break
		}
		schedule = append(schedule, delay)
		total += delay
	}
	if len(schedule) != v1beta1.DefaultImageInspectionMaxRetries {
		t.Fatalf("%d retries, want the budget %d", len(schedule), v1beta1.DefaultImageInspectionMaxRetries)
	}
	if total < time.Minute {
		t.Errorf("the default budget waits %v in all (%v), want at least a minute", total, schedule)
	}
	t.Logf("default retry schedule %v, %v in all", schedule, total)
}
