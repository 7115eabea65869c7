package compare

import (
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// VerdictNoBacklog notes a pass that never had a backlog: it kept up with
// its arrivals, so its bind rate is the arrival rate and says nothing about
// capacity (its latencies do).
const VerdictNoBacklog = "(kept up: no backlog)"

// throughputRows judges how fast a pass binds when it has work waiting: the
// mean bind count of the seconds that ended with at least a second's worth
// of pods still waiting (created, not bound), tested with Welch's t-test. Under a paced arrival the system
// keeps up, every second binds what arrived, and the per-second median is
// the arrival rate whatever the code; only seconds with a backlog show the
// capacity. A burst is all backlog, so there this is the makespan's rate.
// The pass's whole throughput is shown beside it, unjudged.
func throughputRows(prefix string, base, head *report.Pass, o Options) []Row {
	a, b := backlogSeconds(base.PerSecond), backlogSeconds(head.PerSecond)
	name := prefix + "throughput.backlog"
	var row Row
	if len(a) < 2 || len(b) < 2 {
		row = untested(name, scenario.UnitRate, mean(a), mean(b))
		if len(a) == 0 && len(b) == 0 {
			row.Verdict = VerdictNoBacklog
		}
	} else {
		w := stats.WelchT(a, b)
		row = Row{Metric: name, Unit: scenario.UnitRate, Base: w.MeanA, Head: w.MeanB, Change: rel(w.MeanA, w.MeanB), P: w.P, Test: TestWelch}
		row.Verdict, row.Regression = verdict(true, w.P < o.Alpha, row.Change, o)
	}
	return []Row{row, untested(prefix+"throughput", scenario.UnitRate, base.Throughput, head.Throughput)}
}

// backlogSeconds returns the bind counts of the seconds at whose end the
// pods waiting (created so far minus bound so far) were at least as many as
// the second bound: the binding side, not the arrivals, set the pace.
func backlogSeconds(ps report.PerSecond) []float64 {
	var out []float64
	created, bound := 0, 0
	for i, n := range ps.Bound {
		if i < len(ps.Created) {
			created += ps.Created[i]
		}
		bound += n
		if n > 0 && created-bound >= n {
			out = append(out, float64(n))
		}
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return stat.Mean(xs, nil)
}
