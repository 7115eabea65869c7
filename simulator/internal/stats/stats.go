// Package stats holds the simulator's statistics: latency summaries,
// the Mann–Whitney U test that compare uses, and quantiles of Prometheus
// histograms. Pure functions, table-tested.
package stats

import (
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Summary is the distribution of a sample.
type Summary struct {
	// N is the sample size.
	N int `json:"n"`
	// P50, P90, P99, Max and Mean in the sample's unit (seconds for latencies).
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Summarize computes the summary of xs (not modified). Quantiles are
// empirical (the smallest sample with at least that share at or below it),
// as benchstat and most latency tools report them. An empty sample gives
// NaN statistics.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		nan := math.NaN()
		return Summary{P50: nan, P90: nan, P99: nan, Max: nan, Mean: nan}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Summary{
		N:    len(s),
		P50:  stat.Quantile(0.50, stat.Empirical, s, nil),
		P90:  stat.Quantile(0.90, stat.Empirical, s, nil),
		P99:  stat.Quantile(0.99, stat.Empirical, s, nil),
		Max:  s[len(s)-1],
		Mean: stat.Mean(s, nil),
	}
}

// Get returns the named statistic (p50, p90, p99, max, mean).
func (s Summary) Get(name string) float64 {
	switch name {
	case "p50":
		return s.P50
	case "p90":
		return s.P90
	case "p99":
		return s.P99
	case "max":
		return s.Max
	case "mean":
		return s.Mean
	}
	return math.NaN()
}

// Median returns the median of xs (NaN when empty).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MannWhitney is the result of a two-sided Mann–Whitney U test.
type MannWhitney struct {
	// U is the statistic of the first sample (number of pairs where it is
	// larger, ties counting one half).
	U float64
	// Z is the normal-approximation score, continuity- and tie-corrected.
	Z float64
	// P is the two-sided p-value.
	P float64
	// A12 is the probability that a value of the first sample exceeds one of
	// the second (ties count one half): U / (n1·n2). 0.5 means no shift.
	A12 float64
}

// MannWhitneyU tests whether a and b come from the same distribution
// against a shift in either direction.
//
// gonum (v0.17) has no rank-sum test, hence this implementation. It uses
// the normal approximation with the tie correction of the variance and a
// continuity correction, which is accurate for the sample sizes the
// simulator produces (hundreds to tens of thousands of pods); benchstat uses
// the exact distribution only for tiny samples. With fewer than 2 values on
// a side it returns P = 1.
func MannWhitneyU(a, b []float64) MannWhitney {
	n1, n2 := float64(len(a)), float64(len(b))
	if len(a) < 2 || len(b) < 2 {
		return MannWhitney{P: 1, A12: 0.5}
	}
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, len(a)+len(b))
	for _, v := range a {
		all = append(all, obs{v, true})
	}
	for _, v := range b {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	// Mid-ranks for ties; tieTerm accumulates Σ(t³ − t) over tie groups.
	var rankSum, tieTerm float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		t := float64(j - i)
		rank := float64(i+j+1) / 2 // ranks i+1 … j averaged
		for k := i; k < j; k++ {
			if all[k].first {
				rankSum += rank
			}
		}
		tieTerm += t*t*t - t
		i = j
	}
	u := rankSum - n1*(n1+1)/2
	n := n1 + n2
	mean := n1 * n2 / 2
	variance := n1 * n2 / 12 * ((n + 1) - tieTerm/(n*(n-1)))
	res := MannWhitney{U: u, A12: u / (n1 * n2), P: 1}
	if variance <= 0 {
		return res // every value equal: no evidence of a shift
	}
	d := u - mean
	// Continuity correction: move |d| half a unit toward zero.
	switch {
	case d > 0.5:
		d -= 0.5
	case d < -0.5:
		d += 0.5
	default:
		d = 0
	}
	res.Z = d / math.Sqrt(variance)
	res.P = math.Min(1, 2*distuv.UnitNormal.Survival(math.Abs(res.Z)))
	return res
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	// UpperBound is the bucket's upper bound (le).
	UpperBound float64
	// Count is the cumulative count of observations ≤ UpperBound.
	Count float64
}

// HistogramQuantile estimates quantile q (0..1) from cumulative buckets
// sorted by upper bound, interpolating linearly within a bucket as
// Prometheus' histogram_quantile does. It returns NaN without observations;
// a quantile in the +Inf bucket returns the highest finite bound.
func HistogramQuantile(q float64, buckets []Bucket) float64 {
	if len(buckets) == 0 {
		return math.NaN()
	}
	total := buckets[len(buckets)-1].Count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, b := range buckets {
		if b.Count >= rank {
			if math.IsInf(b.UpperBound, 1) {
				return prevBound
			}
			if b.Count == prevCount {
				return b.UpperBound
			}
			return prevBound + (b.UpperBound-prevBound)*(rank-prevCount)/(b.Count-prevCount)
		}
		prevBound, prevCount = b.UpperBound, b.Count
	}
	return prevBound
}
