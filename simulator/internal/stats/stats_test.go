package stats

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestMannWhitneyU(t *testing.T) {
	tests := map[string]struct {
		a, b  []float64
		wantU float64
		wantP float64
	}{
		// Reference values: R wilcox.test(a, b, exact = FALSE, correct = TRUE).
		"complete separation": {a: []float64{1, 2, 3, 4, 5}, b: []float64{6, 7, 8, 9, 10}, wantU: 0, wantP: 0.0121858},
		"ties":                {a: []float64{1, 2, 2, 3}, b: []float64{2, 3, 4, 5}, wantU: 2.5, wantP: 0.1366582},
		"identical":           {a: []float64{1, 2, 3}, b: []float64{1, 2, 3}, wantU: 4.5, wantP: 1},
		"all equal":           {a: []float64{7, 7, 7}, b: []float64{7, 7}, wantU: 3, wantP: 1},
		"too small":           {a: []float64{1}, b: []float64{2, 3}, wantU: 0, wantP: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := MannWhitneyU(tc.a, tc.b)
			if !near(got.U, tc.wantU, 1e-9) || !near(got.P, tc.wantP, 1e-6) {
				t.Errorf("U = %v, p = %v; want U = %v, p = %v", got.U, got.P, tc.wantU, tc.wantP)
			}
			rev := MannWhitneyU(tc.b, tc.a)
			if !near(rev.P, got.P, 1e-12) {
				t.Errorf("p not symmetric: %v vs %v", got.P, rev.P)
			}
		})
	}
}

func TestMannWhitneyULargeShift(t *testing.T) {
	var a, b []float64
	for i := range 2000 {
		x := float64(i%100) / 100
		a = append(a, x)
		b = append(b, x*1.3)
	}
	if p := MannWhitneyU(a, b).P; p > 1e-6 {
		t.Errorf("a 30%% shift over 2000 samples: p = %v, want tiny", p)
	}
	if p := MannWhitneyU(a, a).P; p != 1 {
		t.Errorf("A/A p = %v, want 1", p)
	}
}

func TestSummarize(t *testing.T) {
	var xs []float64
	for i := 100; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	s := Summarize(xs)
	if s.N != 100 || s.P50 != 50 || s.P90 != 90 || s.P99 != 99 || s.Max != 100 || s.Mean != 50.5 {
		t.Errorf("summary %+v", s)
	}
	if xs[0] != 100 {
		t.Error("Summarize sorted its input")
	}
	if e := Summarize(nil); !math.IsNaN(e.P99) || e.N != 0 {
		t.Errorf("empty summary %+v", e)
	}
}

func TestHistogramQuantile(t *testing.T) {
	b := []Bucket{{0.01, 10}, {0.02, 60}, {0.04, 100}, {math.Inf(1), 100}}
	tests := map[string]struct {
		q, want float64
	}{
		"in first bucket": {q: 0.05, want: 0.005},
		"median":          {q: 0.5, want: 0.018},
		"p99":             {q: 0.99, want: 0.0395},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := HistogramQuantile(tc.q, b); !near(got, tc.want, 1e-9) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if got := HistogramQuantile(0.99, []Bucket{{1, 0}, {math.Inf(1), 5}}); got != 1 {
		t.Errorf("quantile in +Inf bucket = %v, want the highest finite bound 1", got)
	}
	if got := HistogramQuantile(0.5, nil); !math.IsNaN(got) {
		t.Errorf("no buckets: %v", got)
	}
}
