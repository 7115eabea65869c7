package procs

import "testing"

func TestSelf(t *testing.T) {
	if cpu, peak := Self(); cpu <= 0 || peak <= 0 {
		t.Errorf("Self() = %v, %d", cpu, peak)
	}
}
