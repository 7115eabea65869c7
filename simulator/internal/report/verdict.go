package report

import (
	"fmt"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// MinExpectedMisplaced is the expected baseline misplacement count above
// which a baseline with none proves the oracle blind: if each at-risk pod
// lands on an unfit node with probability f_i independently, P(no
// misplacement) ≤ exp(−Σf_i), under 1% from 5 on.
const MinExpectedMisplaced = 5

// Verdict returns the reasons the run failed, in a stable order; none means
// it passed. It is the one place that decides the verdict: run errors, a
// missing main pass, deadlines hit, timeline events that failed, were not
// reached or had no observable effect, a blind oracle, missed expectations.
func Verdict(r *Report) []string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, "run error: "+e)
	}
	if r.Main == nil {
		out = append(out, "the main pass did not complete")
	}
	for _, p := range r.Passes() {
		if p.DeadlineHit {
			out = append(out, fmt.Sprintf("%s pass hit its deadline: %d of %d planned pods created, %d not bound (%d Pending by design)",
				p.Name, p.Pods, p.Schedulable+p.PendingByDesign, p.UnboundAtEnd, p.PendingByDesign))
		}
	}
	for _, ev := range r.Timeline {
		if ev.Error != "" {
			out = append(out, fmt.Sprintf("timeline %s at %.1fs: %s", ev.Action, ev.AtSeconds, ev.Error))
		}
	}
	if o := r.Oracle; o != nil && o.ExpectedMisplaced >= MinExpectedMisplaced && o.BaselineMisplaced == 0 {
		out = append(out, fmt.Sprintf("oracle: the baseline shows 0 misplaced pods where the workload should produce about %.0f (%d pods at risk): the misplaced-pod count cannot be trusted",
			o.ExpectedMisplaced, o.AtRiskPods))
	}
	for _, o := range r.Expectations {
		switch {
		case o.NotJudged != "":
			out = append(out, fmt.Sprintf("expectation `%s`: not judged, %s", o.Check, o.NotJudged))
		case !o.Measured:
			out = append(out, fmt.Sprintf("expectation `%s`: not measured by this run", o.Check))
		case !o.Passed:
			out = append(out, fmt.Sprintf("expectation `%s`: measured %s", o.Check, scenario.FormatValue(scenario.Unit(o.Unit), o.Value)))
		}
	}
	return out
}

// ParsedCheck returns the check o was evaluated against, goal included,
// parsed again from its text.
func (o Outcome) ParsedCheck() (scenario.Check, error) {
	c, err := scenario.ParseCheck(o.Check)
	if err != nil {
		return scenario.Check{}, err
	}
	c.Source = o.Source
	if o.Goal != "" {
		if err := c.SetGoal(o.Goal); err != nil {
			return scenario.Check{}, fmt.Errorf("goal %q: %w", o.Goal, err)
		}
	}
	return c, nil
}

// Rejudge evaluates the report's expectations again with this simulator's
// rules and sets its verdict: the checks, the figures and the scenario's
// headroom all travel in the report, so judging is a function of it. (The
// report of an older simulator can be read under the rules of a newer one.)
func (r *Report) Rejudge() error {
	checks := make([]scenario.Check, 0, len(r.Expectations))
	for _, o := range r.Expectations {
		c, err := o.ParsedCheck()
		if err != nil {
			return fmt.Errorf("expectation %q: %w", o.Check, err)
		}
		checks = append(checks, c)
	}
	r.Expectations = Evaluate(r, checks)
	r.Judge()
	return nil
}

// VerdictName names the report's verdict as recorded: "passed", "not judged"
// (only checks the machine could not judge failed) or "failed".
func (r *Report) VerdictName() string {
	switch {
	case r.Passed:
		return "passed"
	case r.NotJudged:
		return "not judged"
	default:
		return "failed"
	}
}

// Judge sets Failures, Passed and NotJudged from Verdict.
func (r *Report) Judge() {
	r.Failures = Verdict(r)
	r.Passed = len(r.Failures) == 0
	notJudged := 0
	for _, o := range r.Expectations {
		if o.NotJudged != "" {
			notJudged++
		}
	}
	r.NotJudged = notJudged > 0 && notJudged == len(r.Failures)
}
