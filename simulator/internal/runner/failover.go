package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/pkg/components"
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

// controllerRestart builds the controllerRestart step. With one instance
// it stops (SIGTERM, or SIGKILL in crash mode) and starts it again after the
// downtime. With a standby it stops the leader the same way and waits until
// the standby holds the lease; the stopped instance comes back as the new
// standby after the downtime. The failover record is filled as it goes;
// ResumedAt comes later from the recorder (resumedAfter).
func (e *operatorEnv) controllerRestart(ev *scenario.RestartEvent, epoch time.Time, fo *report.Failover) step {
	fo.Mode, fo.Replicas = ev.Mode, max(len(e.controllerProcesses()), 1)
	since := func() float64 { return time.Since(epoch).Seconds() }
	if e.kubelet != nil {
		return e.replicaRestart(ev, fo, since)
	}
	var stopped operand.Component
	apply := func(ctx context.Context) error {
		target, holder, err := e.leader(ctx, fo)
		if err != nil {
			return err
		}
		fo.StoppedAt = since()
		if err := stopComponent(target, ev.Mode); err != nil {
			return err
		}
		stopped = target
		if fo.Replicas == 1 {
			return nil
		}
		return e.waitLeaseTaken(ctx, holder, fo, since)
	}
	start := func(context.Context) error {
		if stopped == nil {
			return nil
		}
		err := stopped.Start(e.ctx)
		if fo.Replicas == 1 && err == nil {
			fo.AcquiredAt = since()
		}
		return err
	}
	return step{apply: apply, revert: start, hold: ev.Downtime.D()}
}

// controllerProcesses are the controller instances that run as processes: the kubelet's
// replicas in operator mode, the direct mode's processes otherwise.
func (e *operatorEnv) controllerProcesses() []*operand.Process {
	if e.kubelet != nil {
		return e.kubelet.Processes(components.ControllerDeploymentName)
	}
	return e.op.Controllers
}

// replicaRestart is controllerRestart in operator mode: the kubelet ends the leading replica
// (graceful: as a deleted pod; crash: SIGKILL) and starts its replacement after the downtime,
// while the operator's other replica takes the lease.
func (e *operatorEnv) replicaRestart(ev *scenario.RestartEvent, fo *report.Failover, since func() float64) step {
	apply := func(ctx context.Context) error {
		target, holder, err := e.leader(ctx, fo)
		if err != nil {
			return err
		}
		p, ok := target.(*operand.Process)
		if !ok {
			return errors.New("the leading controller is not a kubelet replica")
		}
		fo.StoppedAt = since()
		if err := e.kubelet.StopReplica(components.ControllerDeploymentName, p, ev.Mode == scenario.RestartCrash, ev.Downtime.D()); err != nil {
			return err
		}
		if fo.Replicas == 1 {
			return nil
		}
		return e.waitLeaseTaken(ctx, holder, fo, since)
	}
	return step{apply: apply}
}

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

// leader returns the controller instance that leads and the lease's holder
// identity ("" with one instance, which runs without leader election), and
// notes the lease's duration in fo before anything released it.
func (e *operatorEnv) leader(ctx context.Context, fo *report.Failover) (operand.Component, string, error) {
	controllers := e.controllerProcesses()
	if len(controllers) < 2 && e.op != nil {
		return e.op.Controller, "", nil
	}
	lease, err := e.r.client.CoordinationV1().Leases(e.r.s.Operator.Namespace).Get(ctx, components.DefaultLeaderElectionID, metav1.GetOptions{})
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
func (e *operatorEnv) waitLeaseTaken(ctx context.Context, old string, fo *report.Failover, since func() float64) error {
	leases := e.r.client.CoordinationV1().Leases(e.r.s.Operator.Namespace)
	limit := time.Now().Add(time.Duration(fo.LeaseDurationSeconds*float64(time.Second)) + failoverWaitMargin)
	for {
		lease, err := leases.Get(ctx, components.DefaultLeaderElectionID, metav1.GetOptions{})
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
