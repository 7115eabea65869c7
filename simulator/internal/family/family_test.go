package family

import (
	"strings"
	"testing"
)

func TestCheckFlat(t *testing.T) {
	pts := func(costs ...float64) []Point {
		var out []Point
		for i, c := range costs {
			out = append(out, Point{Scenario: []string{"s1", "s2", "s3", "s4"}[i], CPUPer1kPods: c})
		}
		return out
	}
	for name, tc := range map[string]struct {
		points    []Point
		wantErr   bool
		wantWorst string
	}{
		"flat":                   {points: pts(10, 11, 9, 10)},
		"one point 30% too dear": {points: pts(10, 10, 10, 14), wantErr: true, wantWorst: "s4"},
		"one point too cheap":    {points: pts(10, 10, 10, 6), wantErr: true, wantWorst: "s4"},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := CheckFlat(tc.points, 0.2)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && (f.Worst != tc.wantWorst || !strings.Contains(err.Error(), tc.wantWorst)) {
				t.Errorf("worst = %q (%v), want %q", f.Worst, err, tc.wantWorst)
			}
		})
	}
}
