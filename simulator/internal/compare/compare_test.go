package compare

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// run builds a report whose per-pod latencies are drawn from one
// distribution scaled by scale, with its own seed (two runs of the same
// code never give the same samples).
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
	for range 30 {
		p.PerSecond.Bound = append(p.PerSecond.Bound, int(100/scale)+rng.IntN(10))
	}
	p.Throughput = 100 / scale
	return &report.Report{SchemaVersion: report.SchemaVersion, Scenario: report.ScenarioInfo{Name: "s"}, Main: p}
}

func TestCompareAA(t *testing.T) {
	res := Compare(run(1, 1), run(2, 1), Options{})
	if res.Regressions != 0 || res.Improvements != 0 {
		t.Errorf("A/A: %d regressions, %d improvements, want none:\n%s", res.Regressions, res.Improvements, table(res))
	}
}

func TestCompareSmallSystematicShiftIsNotAVerdict(t *testing.T) {
	// 8% slower: with 3000 samples the test calls it significant, the
	// effect-size gate does not call it a regression.
	res := Compare(run(1, 1), run(2, 1.08), Options{})
	significant := false
	for _, r := range res.Rows {
		if r.Tested && r.P < DefaultAlpha {
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

func TestCompareRegression(t *testing.T) {
	res := Compare(run(1, 1), run(2, 1.6), Options{})
	want := map[string]string{"gateHold.p50": VerdictWorse, "schedule.p50": VerdictWorse, "throughput": VerdictWorse}
	for _, r := range res.Rows {
		if v, ok := want[r.Metric]; ok && r.Verdict != v {
			t.Errorf("%s: verdict %q, want %q", r.Metric, r.Verdict, v)
		}
	}
	if res.Regressions == 0 {
		t.Error("no regression found")
	}
	better := Compare(run(1, 1.6), run(2, 1), Options{})
	if better.Regressions != 0 || better.Improvements == 0 {
		t.Errorf("faster head: %d regressions, %d improvements", better.Regressions, better.Improvements)
	}
}

func TestCompareIgnoresTinyAbsoluteChanges(t *testing.T) {
	// Median 6 ms → 12 ms: significant and +100%, but 6 ms is noise on a
	// busy machine, below DefaultMinLatencyDelta.
	base, head := run(1, 0.1), run(2, 0.2)
	res := Compare(base, head, Options{})
	for _, r := range res.Rows {
		if r.Metric == "schedule.p50" && r.Verdict != VerdictSame {
			t.Errorf("schedule.p50 %v → %v: verdict %q, want ~", r.Base, r.Head, r.Verdict)
		}
	}
}

func table(res Result) string {
	var b bytes.Buffer
	r := run(1, 1)
	Print(&b, r, r, "base", "head", res, Options{})
	return b.String()
}

func TestPrint(t *testing.T) {
	out := table(Compare(run(1, 1), run(2, 1), Options{}))
	for _, want := range []string{"metric", "gateHold.p50", "throughput", "result: no significant change"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCompareDisturbedRunIsInconclusive(t *testing.T) {
	base, head := run(1, 1), run(2, 1.6)
	head.Environment.ForeignCPUShare = 0.4
	res := Compare(base, head, Options{})
	if res.Regressions != 0 || len(res.Disturbed) != 1 {
		t.Errorf("disturbed head: %d regressions, disturbed %v; want 0 and the head named", res.Regressions, res.Disturbed)
	}
	var b bytes.Buffer
	Print(&b, base, head, "b", "h", res, Options{})
	if !strings.Contains(b.String(), "result: inconclusive") {
		t.Errorf("output lacks the inconclusive result:\n%s", b.String())
	}
}
