package stats

import (
	"math/rand/v2"
	"testing"
)

func TestBootstrapQuantileDiff(t *testing.T) {
	draw := func(seed uint64, n int, scale float64) []float64 {
		rng := rand.New(rand.NewPCG(seed, 1))
		out := make([]float64, n)
		for i := range out {
			out[i] = scale * (0.5 + rng.ExpFloat64())
		}
		return out
	}
	o := BootstrapOptions{Resamples: 1000, Confidence: 0.99, Seed: 7}
	cases := []struct {
		name          string
		a, b          []float64
		q             float64
		wantAboveZero bool // the interval excludes zero on the positive side
		wantBelowZero bool
	}{
		{name: "same distribution p99", a: draw(1, 3000, 1), b: draw(2, 3000, 1), q: 0.99},
		{name: "same distribution p90", a: draw(3, 3000, 1), b: draw(4, 3000, 1), q: 0.90},
		{name: "doubled p99", a: draw(1, 3000, 1), b: draw(2, 3000, 2), q: 0.99, wantAboveZero: true},
		{name: "halved p90", a: draw(1, 3000, 1), b: draw(2, 3000, 0.5), q: 0.90, wantBelowZero: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := BootstrapQuantileDiff(c.a, c.b, c.q, o)
			if !(d.Lo <= d.Diff && d.Diff <= d.Hi) {
				t.Errorf("interval [%v, %v] does not hold the estimate %v", d.Lo, d.Hi, d.Diff)
			}
			if got := d.Lo > 0; got != c.wantAboveZero {
				t.Errorf("Lo %v > 0 = %v, want %v (diff %v)", d.Lo, got, c.wantAboveZero, d.Diff)
			}
			if got := d.Hi < 0; got != c.wantBelowZero {
				t.Errorf("Hi %v < 0 = %v, want %v (diff %v)", d.Hi, got, c.wantBelowZero, d.Diff)
			}
		})
	}
}

func TestBootstrapQuantileDiffMatchesSummarize(t *testing.T) {
	a := []float64{5, 1, 4, 2, 3, 9, 8, 7, 6, 10}
	d := BootstrapQuantileDiff(a, a, 0.9, BootstrapOptions{Resamples: 10, Confidence: 0.9})
	if s := Summarize(a); d.A != s.P90 || d.B != s.P90 || d.Diff != 0 {
		t.Errorf("quantiles %v, %v; Summarize says p90 %v", d.A, d.B, s.P90)
	}
	if d := BootstrapQuantileDiff([]float64{1}, []float64{3}, 0.5, BootstrapOptions{Resamples: 10}); d.Lo != 2 || d.Hi != 2 {
		t.Errorf("single values: interval [%v, %v], want the difference 2 itself", d.Lo, d.Hi)
	}
}

// TestResamplerMatchesNaiveBootstrap: the binomial shortcut draws the same
// distribution as resampling with replacement and sorting.
func TestResamplerMatchesNaiveBootstrap(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	const q, draws = 0.9, 40000
	rng := rand.New(rand.NewPCG(1, 2))
	fast, naive := map[float64]float64{}, map[float64]float64{}
	r := newResampler(sorted, q)
	resample := make([]float64, len(sorted))
	for range draws {
		fast[r.draw(rng)] += 1.0 / draws
		for i := range resample {
			resample[i] = sorted[rng.IntN(len(sorted))]
		}
		naive[Summarize(resample).P90] += 1.0 / draws
	}
	for _, v := range sorted {
		if d := fast[v] - naive[v]; d > 0.01 || d < -0.01 {
			t.Errorf("P(p90 = %v): shortcut %.3f, naive %.3f", v, fast[v], naive[v])
		}
	}
}

func TestWelchT(t *testing.T) {
	cases := []struct {
		name      string
		a, b      []float64
		wantBelow float64 // P must be below this (0: must be at least 0.05)
	}{
		{name: "same", a: []float64{10, 12, 11, 9, 10, 11}, b: []float64{11, 10, 9, 12, 10, 11}},
		{name: "shifted", a: []float64{100, 104, 98, 101, 99, 103}, b: []float64{70, 73, 69, 72, 71, 68}, wantBelow: 0.001},
		{name: "constant different", a: []float64{5, 5}, b: []float64{6, 6}, wantBelow: 1e-9},
		{name: "too small", a: []float64{1}, b: []float64{2, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := WelchT(c.a, c.b)
			if c.wantBelow > 0 && w.P >= c.wantBelow {
				t.Errorf("P = %v, want < %v", w.P, c.wantBelow)
			}
			if c.wantBelow == 0 && w.P < 0.05 {
				t.Errorf("P = %v, want ≥ 0.05", w.P)
			}
		})
	}
}
