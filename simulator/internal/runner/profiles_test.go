package runner

import (
	"slices"
	"testing"

	"github.com/archgate/archgate/simulator/internal/operand"
)

func TestProfileNames(t *testing.T) {
	tests := map[string]struct {
		components []string
		want       []string
	}{
		"one process per component keeps its name": {
			components: []string{"scheduler", "webhook", "controller"},
			want:       []string{"scheduler", "webhook", "controller"},
		},
		"replicas are numbered per component, in order": {
			components: []string{"scheduler", "controller", "controller", "webhook", "webhook", "webhook"},
			want:       []string{"scheduler", "controller-1", "controller-2", "webhook-1", "webhook-2", "webhook-3"},
		},
		"none": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			procs := make([]*operand.Process, len(tc.components))
			for i, c := range tc.components {
				procs[i] = &operand.Process{Name: c}
			}
			if got := profileNames(procs); !slices.Equal(got, tc.want) {
				t.Errorf("profileNames(%v) = %v, want %v", tc.components, got, tc.want)
			}
		})
	}
}
