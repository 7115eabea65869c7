package compare

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// run builds a valid report of a burst (every pod created in the first
// second) whose per-pod latencies are drawn from one distribution scaled by
// scale, with its own seed (two runs of the same code never give the same
// samples), bound at about 100/scale pods per second.
func run(seed uint64, scale float64) *report.Report {
	rng := rand.New(rand.NewPCG(seed, 9))
	p := &report.Pass{Name: "main", Operator: true, Pods: 3000, BoundPods: 3000, Latency: map[string]stats.Summary{}}
	for range 3000 {
		// Skewed latencies with a median of about 60 ms.
		x := func() int64 { return int64(scale * 50000 * (0.5 + rng.ExpFloat64())) }
		p.Samples.GateHold = append(p.Samples.GateHold, x())
		p.Samples.Schedule = append(p.Samples.Schedule, x())
		p.Samples.Total = append(p.Samples.Total, x())
		p.Samples.Create = append(p.Samples.Create, x())
	}
	p.PerSecond.Bound = boundPerSecond(rng, 3000, 100/scale)
	p.PerSecond.Created = make([]int, len(p.PerSecond.Bound))
	p.PerSecond.Created[0] = 3000
	p.Throughput = 100 / scale
	return &report.Report{SchemaVersion: report.SchemaVersion, Scenario: report.ScenarioInfo{Name: "s"}, Main: p, Passed: true}
}

// boundPerSecond spreads pods over seconds at about rate per second (±5%).
func boundPerSecond(rng *rand.Rand, pods int, rate float64) []int {
	var out []int
	for left := pods; left > 0; {
		n := min(left, int(rate*(0.95+0.1*rng.Float64())))
		out = append(out, n)
		left -= n
	}
	return out
}

// verdicts maps each row to its verdict.
func verdicts(res Result) map[string]string {
	out := map[string]string{}
	for _, r := range res.Rows {
		out[r.Metric] = r.Verdict
	}
	return out
}

func TestCompareAAIsNoChange(t *testing.T) {
	res := Compare(run(1, 1), run(2, 1), Options{})
	if res.Regressions != 0 || res.Improvements != 0 {
		t.Errorf("A/A: %d regressions, %d improvements, want none:\n%s", res.Regressions, res.Improvements, table(res))
	}
	if out := table(res); !strings.Contains(out, "result: no change") {
		t.Errorf("A/A output lacks \"result: no change\":\n%s", out)
	}
}

// TestCompareCraftedPairs: each kind of regression a user cares about,
// alone in an otherwise A/A pair, is flagged on its own row.
func TestCompareCraftedPairs(t *testing.T) {
	cases := []struct {
		name  string
		craft func(head *report.Report)
		want  []string // rows that must say worse
	}{
		{name: "misplaced 0 → 5", craft: func(h *report.Report) { h.Main.MisplacedPods = 5 }, want: []string{"misplacedPods"}},
		{name: "gated at the end 0 → 1", craft: func(h *report.Report) { h.Main.GatedAtEnd = 1 }, want: []string{"gatedAtEnd"}},
		{name: "unbound at the end 0 → 2", craft: func(h *report.Report) { h.Main.UnboundAtEnd = 2 }, want: []string{"unboundAtEnd"}},
		{name: "recorder drops 0 → 1", craft: func(h *report.Report) { h.Main.Recorder.Drops = 1 }, want: []string{"recorderDrops"}},
		{name: "p99 doubled", craft: func(h *report.Report) { doubleTail(h.Main.Samples.Total, 0.98) }, want: []string{"total.p99"}},
		{name: "throughput -30%", craft: func(h *report.Report) {
			h.Main.PerSecond = slowBinds(h.Main.PerSecond, 0.7)
		}, want: []string{"throughput.backlog"}},
		{name: "failed run", craft: func(h *report.Report) {
			h.Passed = false
			h.Expectations = []report.Outcome{{Check: "unboundAtEnd == 0"}}
		}, want: []string{"failedRun"}},
		{name: "deadline hit", craft: func(h *report.Report) { h.Passed, h.Main.DeadlineHit = false, true }, want: []string{"failedRun"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			head := run(2, 1)
			c.craft(head)
			res := Compare(run(1, 1), head, Options{})
			got := res.names(VerdictWorse)
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s not flagged; worse rows %v:\n%s", w, got, table(res))
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("worse rows %v, want only %v:\n%s", got, c.want, table(res))
			}
		})
	}
}

// doubleTail doubles the samples above the q-quantile, leaving the median.
func doubleTail(us []int64, q float64) {
	s := slices.Sorted(slices.Values(us))
	cut := s[int(q*float64(len(s)))]
	for i, v := range us {
		if v >= cut {
			us[i] = 2 * v
		}
	}
}

// slowBinds rebinds the same pods at factor times the rate.
func slowBinds(ps report.PerSecond, factor float64) report.PerSecond {
	total := 0
	for _, n := range ps.Bound {
		total += n
	}
	out := report.PerSecond{Bound: boundPerSecond(rand.New(rand.NewPCG(3, 3)), total, 100*factor)}
	out.Created = make([]int, len(out.Bound))
	out.Created[0] = total
	return out
}

func TestCompareSmallSystematicShiftIsNotAVerdict(t *testing.T) {
	// 8% slower: with 3000 samples the test calls it significant, the
	// effect-size gate does not call it a regression.
	res := Compare(run(1, 1), run(2, 1.08), Options{})
	significant := false
	for _, r := range res.Rows {
		if r.Test == TestU && r.P < DefaultAlpha {
			significant = true
		}
	}
	if !significant {
		t.Errorf("an 8%% shift over 3000 samples should be significant:\n%s", table(res))
	}
	if res.Regressions != 0 {
		t.Errorf("an 8%% shift is below the %v threshold, got %d regressions:\n%s", DefaultThreshold, res.Regressions, table(res))
	}
}

func TestCompareSlowerEverywhere(t *testing.T) {
	res := Compare(run(1, 1), run(2, 1.6), Options{})
	v := verdicts(res)
	for _, m := range []string{"gateHold.p50", "schedule.p50", "total.p90", "total.p99", "throughput.backlog"} {
		if v[m] != VerdictWorse {
			t.Errorf("%s: verdict %q, want worse", m, v[m])
		}
	}
	better := Compare(run(1, 1.6), run(2, 1), Options{})
	if better.Regressions != 0 || better.Improvements == 0 {
		t.Errorf("faster head: %d regressions, %d improvements", better.Regressions, better.Improvements)
	}
}

func TestCompareIgnoresTinyAbsoluteChanges(t *testing.T) {
	// Median 6 ms → 12 ms: significant and +100%, but 6 ms is noise on a
	// busy machine, below DefaultMinLatencyDelta.
	res := Compare(run(1, 0.1), run(2, 0.2), Options{})
	if v := verdicts(res)["schedule.p50"]; v != VerdictSame {
		t.Errorf("schedule.p50 6 ms → 12 ms: verdict %q, want ~", v)
	}
}

func TestComparePacedArrivalHasNoBacklog(t *testing.T) {
	// Every second binds what it created: the rate is the arrival rate,
	// and a 30% slower binder that still keeps up cannot show in it.
	paced := func(r *report.Report, rate int) {
		r.Main.PerSecond = report.PerSecond{Created: slices.Repeat([]int{rate}, 30), Bound: slices.Repeat([]int{rate}, 30)}
	}
	base, head := run(1, 1), run(2, 1)
	paced(base, 100)
	paced(head, 100)
	if v := verdicts(Compare(base, head, Options{}))["throughput.backlog"]; v != VerdictNoBacklog {
		t.Errorf("paced arrival kept up: verdict %q, want %q", v, VerdictNoBacklog)
	}
}

func TestBacklogSeconds(t *testing.T) {
	cases := []struct {
		name string
		ps   report.PerSecond
		want []float64
	}{
		{name: "burst drains", ps: report.PerSecond{Created: []int{300}, Bound: []int{100, 100, 100}}, want: []float64{100, 100}},
		{name: "paced keeps up", ps: report.PerSecond{Created: []int{50, 50, 50}, Bound: []int{45, 50, 55}}},
		{name: "paced falls behind", ps: report.PerSecond{Created: []int{100, 100, 100, 0}, Bound: []int{40, 40, 40, 40}}, want: []float64{40, 40, 40, 40}},
		{name: "empty", ps: report.PerSecond{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := backlogSeconds(c.ps); !slices.Equal(got, c.want) {
				t.Errorf("backlogSeconds = %v, want %v", got, c.want)
			}
		})
	}
}

func TestCompareFailedBaseIsRefused(t *testing.T) {
	base, head := run(1, 1), run(2, 1.6)
	base.Errors = []string{"watch lost"}
	res := Compare(base, head, Options{})
	if !res.BaseFailed() || res.Regressions != 0 {
		t.Errorf("failed base: BaseFailed %v, %d regressions; want refused with none:\n%s", res.BaseFailed(), res.Regressions, table(res))
	}
	if out := table(res); !strings.Contains(out, "FAILED RUN: base") || !strings.Contains(out, "refused") {
		t.Errorf("output does not flag the failed base:\n%s", out)
	}
}

func TestCompareDisturbedRunIsInconclusive(t *testing.T) {
	base, head := run(1, 1), run(2, 1.6)
	head.Environment.ForeignCPUShare = 0.4
	res := Compare(base, head, Options{})
	if res.Regressions != 0 || len(res.Disturbed) != 1 {
		t.Errorf("disturbed head: %d regressions, disturbed %v; want 0 and the head named", res.Regressions, res.Disturbed)
	}
	if out := table(res); !strings.Contains(out, "inconclusive") {
		t.Errorf("output lacks the inconclusive result:\n%s", out)
	}
	// Misplaced pods are not noise: they count on a disturbed machine too.
	head.Main.MisplacedPods = 1
	if res := Compare(base, head, Options{}); verdicts(res)["misplacedPods"] != VerdictWorse || res.Regressions != 1 {
		t.Errorf("disturbed head with a misplaced pod: %d regressions:\n%s", res.Regressions, table(res))
	}
}

func TestPrint(t *testing.T) {
	out := table(Compare(run(1, 1), run(2, 1), Options{}))
	for _, want := range []string{"metric", "gateHold.p50", "total.p99", "Δ in [", "throughput.backlog", "misplacedPods", "result: no change"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func table(res Result) string {
	var b bytes.Buffer
	r := run(1, 1)
	Print(&b, Named{Name: "base", Report: r}, Named{Name: "head", Report: r}, res, Options{})
	return b.String()
}
