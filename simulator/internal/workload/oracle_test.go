package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBaselineRisk(t *testing.T) {
	amd := Pod{Allowed: []string{"amd64"}}
	multi := Pod{Allowed: []string{"amd64", "arm64"}}
	for name, tc := range map[string]struct {
		pods  []Pod
		nodes map[string]int
		want  MisplacementRisk
	}{
		"single-arch pods on a mixed cluster are at risk": {
			pods: []Pod{amd, amd}, nodes: map[string]int{"amd64": 3, "arm64": 1},
			want: MisplacementRisk{AtRiskPods: 2, Expected: 0.5},
		},
		"pods that run everywhere are not": {
			pods: []Pod{multi, {AnyArch: true}}, nodes: map[string]int{"amd64": 3, "arm64": 1},
			want: MisplacementRisk{},
		},
		"pods pinning their own architecture are not": {
			pods:  []Pod{{Allowed: []string{"amd64"}, ArchAffinity: "amd64"}, {Allowed: []string{"amd64"}, NodeSelectorArch: "amd64"}},
			nodes: map[string]int{"amd64": 1, "arm64": 1},
			want:  MisplacementRisk{},
		},
		"a single-arch cluster cannot misplace": {
			pods: []Pod{amd}, nodes: map[string]int{"amd64": 5},
			want: MisplacementRisk{},
		},
		"no nodes": {pods: []Pod{amd}, want: MisplacementRisk{}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, BaselineRisk(tc.pods, tc.nodes)); diff != "" {
				t.Errorf("BaselineRisk (-want +got):\n%s", diff)
			}
		})
	}
}
