package calibrate

import "testing"

// TestNsPerOpMeasures checks that a measurement comes back, not how fast the
// machine is (no timing assertions in tests).
func TestNsPerOpMeasures(t *testing.T) {
	if ns := NsPerOp(1); !(ns > 0) {
		t.Fatalf("NsPerOp(1) = %v, want a positive duration", ns)
	}
}
