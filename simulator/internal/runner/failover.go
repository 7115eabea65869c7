package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opcomponents "github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/recorder"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// leaderMetric is client-go's leader election gauge that controller-runtime
// serves on each instance's /metrics: 1 on the leader.
const leaderMetric = "leader_election_master_status"

// failoverWaitMargin is how long, beyond the lease duration, a stop may
// take to hand the lease over before the event counts as failed: the
// standby retries every 2 s (controller-runtime's RetryPeriod, with jitter).
const failoverWaitMargin = 10 * time.Second

// stopComponent stops c gracefully, or kills it in crash mode.
func stopComponent(c operand.Component, mode string) error {
	if mode != scenario.RestartCrash {
		c.Stop()
		return nil
	}
	p, ok := c.(*operand.Process)
	if !ok {
		return errors.New("crash mode needs the controller as a process (the archgate binary, not --in-process)")
	}
	p.Kill()
	return nil
}

// leader returns the controller instance of controllers that leads and the lease's holder
// identity, and notes the lease's duration in fo before anything released it.
func leader(ctx context.Context, k *kube, ns string, controllers []*operand.Process, fo *report.Failover) (*operand.Process, string, error) {
	lease, err := k.client.CoordinationV1().Leases(ns).Get(ctx, opcomponents.DefaultLeaderElectionID, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("reading the controller's lease: %w", err)
	}
	if d := lease.Spec.LeaseDurationSeconds; d != nil {
		fo.LeaseDurationSeconds = float64(*d)
	}
	for _, p := range controllers {
		if p.Pid() == 0 {
			continue
		}
		families, err := p.Families(ctx)
		if err != nil {
			continue
		}
		for _, f := range families {
			if f.GetName() != leaderMetric {
				continue
			}
			for _, m := range f.GetMetric() {
				if m.GetGauge().GetValue() == 1 {
					return p, ptrString(lease.Spec.HolderIdentity), nil
				}
			}
		}
	}
	return nil, "", fmt.Errorf("no controller instance reports %s 1 (lease held by %q)", leaderMetric, ptrString(lease.Spec.HolderIdentity))
}

// waitLeaseTaken polls the lease until another instance than old holds it,
// for at most the lease duration plus failoverWaitMargin.
func waitLeaseTaken(ctx context.Context, k *kube, ns, old string, fo *report.Failover, since func() float64) error {
	leases := k.client.CoordinationV1().Leases(ns)
	limit := time.Now().Add(time.Duration(fo.LeaseDurationSeconds*float64(time.Second)) + failoverWaitMargin)
	for {
		lease, err := leases.Get(ctx, opcomponents.DefaultLeaderElectionID, metav1.GetOptions{})
		if err == nil {
			if h := ptrString(lease.Spec.HolderIdentity); h != "" && h != old {
				fo.AcquiredAt = since()
				return nil
			}
		}
		if time.Now().After(limit) {
			return fmt.Errorf("no standby took the lease from %q within the lease duration (%.0fs) + %s", old, fo.LeaseDurationSeconds, failoverWaitMargin)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the standby to take the lease: %w", err)
		}
	}
}

// resumedAfter is the first gate removal the recorder saw at or after
// offset at, or -1.
func resumedAfter(pods []recorder.PodTimes, at time.Duration) time.Duration {
	first := time.Duration(-1)
	for _, p := range pods {
		if p.Ungated >= at && (first < 0 || p.Ungated < first) {
			first = p.Ungated
		}
	}
	return first
}

// completeFailovers sets each failover's ResumedAt and Seconds from the
// recorder's times, and fails an event after which no gate was removed.
func completeFailovers(events []report.AppliedEvent, pods []recorder.PodTimes) {
	for i := range events {
		fo := events[i].Failover
		if fo == nil || events[i].Error != "" {
			continue
		}
		from := time.Duration(fo.AcquiredAt * float64(time.Second))
		r := resumedAfter(pods, from)
		if r < 0 {
			fo.ResumedAt = -1
			events[i].Error = "no observable effect: no gate was removed after the controller came back"
			continue
		}
		fo.ResumedAt = r.Seconds()
		fo.Seconds = fo.ResumedAt - fo.StoppedAt
		taken := "started again"
		if fo.Replicas > 1 {
			taken = "lease taken by the standby"
		}
		events[i].Effect = fmt.Sprintf("%s stop; %s %.1fs later, gates removed again %.1fs after the stop",
			fo.Mode, taken, fo.AcquiredAt-fo.StoppedAt, fo.Seconds)
	}
}

// completeWebhookDowns checks each webhookDown window's effect from the
// recorder's times: pods first seen during the window without the gate
// (failurePolicy Ignore admits them ungated), among the pods the webhook
// would gate (not pinned by a nodeSelector). None means the window tested
// nothing, which fails the run.
func completeWebhookDowns(events []report.AppliedEvent, times []recorder.PodTimes, pods []workload.Pod) {
	for i := range events {
		ev := &events[i]
		if ev.Action != "webhookDown" || ev.Error != "" {
			continue
		}
		from := time.Duration(ev.AtSeconds * float64(time.Second))
		to := time.Duration(ev.EndSeconds * float64(time.Second))
		n := 0
		for j, t := range times {
			if pods[j].NodeSelectorArch == "" && t.Seen >= from && t.Seen <= to && t.Gated < 0 {
				n++
			}
		}
		if n == 0 {
			ev.Error = "no observable effect: no pod was admitted ungated while the webhook was down"
			continue
		}
		ev.Effect = fmt.Sprintf("%d pods admitted ungated", n)
	}
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
