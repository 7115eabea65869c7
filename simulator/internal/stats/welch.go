package stats

import (
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Welch is the result of Welch's two-sample t-test.
type Welch struct {
	// MeanA and MeanB are the sample means; T the statistic; P the
	// two-sided p-value (1 when untestable).
	MeanA, MeanB, T, P float64
}

// WelchT tests whether a and b have the same mean without assuming equal
// variances. gonum has the t distribution but not the test. Per-second
// bind counts are sums of many pods, so their means are close to normal
// and the test has more power on them than a rank test on a few dozen
// noisy seconds.
func WelchT(a, b []float64) Welch {
	w := Welch{MeanA: math.NaN(), MeanB: math.NaN(), P: 1}
	if len(a) < 2 || len(b) < 2 {
		return w
	}
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	w.MeanA, w.MeanB = ma, mb
	sa, sb := va/float64(len(a)), vb/float64(len(b))
	if sa+sb == 0 {
		if ma != mb {
			w.P = 0
		}
		return w
	}
	w.T = (mb - ma) / math.Sqrt(sa+sb)
	df := (sa + sb) * (sa + sb) / (sa*sa/float64(len(a)-1) + sb*sb/float64(len(b)-1))
	w.P = math.Min(1, 2*distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(w.T)))
	return w
}
