package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	opcomponents "github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/simulator/internal/kubelet"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

const (
	// simImage is the image the operator renders into the components'
	// Deployments; package kubelet runs the archgate binary for it.
	simImage = "archgate.sim.invalid/archgate:sim"
	// operatorComponent names the operator's process in logs and costs.
	operatorComponent = "operator"
)

// renderedComponents is operator mode: `archgate operator` runs as a process with the
// arguments of deploy/, and the simulator's kubelet (package kubelet) runs the Deployments it
// renders as processes of the archgate binary. Component failures are the operator's (the
// kubelet restarts the replicas, as a cluster would) and the kubelet's.
type renderedComponents struct {
	kube      *kube
	namespace string
	admin     *adminConfig
	kubelet   *kubelet.Kubelet
	operator  *operand.Process
	counters  *operand.Counters
	cleanups  cleanups
}

// processEnv is what archgate's processes need from the simulated cluster.
type processEnv struct {
	binary, kubeconfig, logs string
	// dir is the run's working directory.
	dir string
	// watch hands a started process to the run's sampler.
	watch func(name string, pid int)
}

// startRendered runs archgate as a cluster would: the admin's objects (the operator's
// namespace, the registry's CA ConfigMap, the pull secret and the ClusterPodPlacementConfig),
// the operator and the kubelet; it waits until the operator rolled the components out and the
// webhook gates pods.
func (c *simulatedCluster) startRendered(ctx context.Context, probe probe) (components, error) {
	if c.opts.Archgate == "" {
		return nil, errors.New("operator.mode operator runs the components from the operator's Deployments as processes of the archgate binary: " +
			"pass --archgate (make archgate), or set operator.mode: direct to run them in-process")
	}
	admin, err := c.configure(ctx, c.registry())
	if err != nil {
		return nil, err
	}
	env, err := c.processEnv()
	if err != nil {
		return nil, err
	}
	rc := &renderedComponents{kube: c.kube, namespace: c.s.Operator.Namespace, admin: admin, counters: operand.NewCounters()}
	c.cleanups.add(rc.cleanups.run)
	if err := rc.start(ctx, env, c.s.Operator.FailOpenGracePeriod.D(), c.opts.ProfileDir != "", c.logf); err != nil {
		return nil, err
	}
	if err := waitRolledOut(ctx, c.kube, rc.namespace); err != nil {
		return nil, fmt.Errorf("%w%s", err, rc.kubeletErr())
	}
	if err := probe.waitGated(ctx, c.kube.crc, c.registry().host, renderedGateWait); err != nil {
		return nil, fmt.Errorf("%w%s", err, rc.kubeletErr())
	}
	return rc, nil
}

// start starts the kubelet and the operator (with failOpen as --fail-open-grace-period).
func (rc *renderedComponents) start(ctx context.Context, env processEnv, failOpen time.Duration, pprof bool, logf func(string, ...any)) error {
	hostIP, err := kubelet.HostIP()
	if err != nil {
		return err
	}
	token, err := metricsToken(ctx, rc.kube, rc.namespace)
	if err != nil {
		return err
	}
	rc.kubelet = kubelet.New(kubelet.Options{
		Client: rc.kube.client, Namespace: rc.namespace, Binary: env.binary, HostIP: hostIP,
		Kubeconfig: env.kubeconfig, Dir: filepath.Join(env.dir, "pods"), LogDir: env.logs, Counters: rc.counters,
		MetricsAuth: &operand.MetricsAuth{Token: token, SkipVerify: true},
		Pprof:       pprof,
		OnStart:     env.watch,
		Logf:        logf,
	})
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rc.kubelet.Run(kctx) }()
	rc.cleanups.add(func() { cancel(); <-done })
	op, err := operatorProcess(env, rc.namespace, failOpen)
	if err != nil {
		return err
	}
	if err := op.Start(ctx); err != nil {
		return fmt.Errorf("starting the operator: %w", err)
	}
	rc.operator = op
	rc.cleanups.add(op.Stop)
	return nil
}

// operatorProcess is `archgate operator` with deploy/base/operator.yaml's arguments (its
// validating webhooks are served but not registered: the simulator installs the CRDs only),
// plus the scenario's --fail-open-grace-period.
func operatorProcess(env processEnv, namespace string, failOpen time.Duration) (*operand.Process, error) {
	ports, err := operand.FreePorts("127.0.0.1", 3)
	if err != nil {
		return nil, err
	}
	addr := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	args := []string{env.binary, "operator", "--kubeconfig", env.kubeconfig,
		"--operator-namespace=" + namespace, "--image=" + simImage,
		"--leader-elect", "--cert-provider=self-signed",
		"--webhook-host=127.0.0.1", "--webhook-port=" + strconv.Itoa(ports[0]),
		"--metrics-bind-address=" + addr(ports[1]), "--health-probe-bind-address=" + addr(ports[2])}
	if failOpen > 0 {
		args = append(args, "--fail-open-grace-period="+failOpen.String())
	}
	return &operand.Process{
		Name: operatorComponent, Command: args,
		// No proxy variables: the operator would pass them on to the components.
		Env:      []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		ReadyURL: "http://" + addr(ports[2]) + "/readyz",
		LogPath:  filepath.Join(env.logs, "operator.log"),
		OnStart:  func(pid int) { env.watch(operatorComponent, pid) },
	}, nil
}

// err is the operator's: the kubelet restarts the replicas that stop.
func (rc *renderedComponents) err() error { return rc.operator.Err() }

// processes are every replica the kubelet runs.
func (rc *renderedComponents) processes() []*operand.Process { return rc.kubelet.AllProcesses() }

func (rc *renderedComponents) count() componentCount {
	return counting(rc.counters, rc.kubelet.Restarts)
}

// startLocal does nothing: local placement is refused in operator mode (the kubelet runs the
// operator's namespace only).
func (rc *renderedComponents) startLocal(context.Context, string) error { return nil }

func (rc *renderedComponents) step(ctx context.Context, ev scenario.Event, epoch time.Time, rec *report.AppliedEvent) (step, bool) {
	switch {
	case ev.ControllerRestart != nil:
		rec.Failover = &report.Failover{}
		return rc.replicaRestart(ev.ControllerRestart, epoch, rec.Failover), true
	case ev.ControllerDown != nil:
		rec.Registration = &report.Registration{}
		return rc.componentDown(ctx, opcomponents.ControllerDeploymentName, ev.ControllerDown.Duration.D(), rec.Registration), true
	case ev.WebhookDown != nil:
		rec.Registration = &report.Registration{}
		return rc.componentDown(ctx, opcomponents.WebhookDeploymentName, ev.WebhookDown.Duration.D(), rec.Registration), true
	case ev.ClusterConfigChanged != nil:
		return rc.configChange(ctx, ev.ClusterConfigChanged.Spec), true
	}
	return rc.admin.step(ev)
}

// kubeletErr is the kubelet's last error, for a message; "" when none.
func (rc *renderedComponents) kubeletErr() string {
	if rc.kubelet == nil || rc.kubelet.Err() == nil {
		return ""
	}
	return "; kubelet: " + rc.kubelet.Err().Error()
}

// replicaRestart is controllerRestart in operator mode: the kubelet ends the leading replica
// (graceful: as a deleted pod; crash: SIGKILL) and starts its replacement after the downtime,
// while the operator's other replica takes the lease.
func (rc *renderedComponents) replicaRestart(ev *scenario.RestartEvent, epoch time.Time, fo *report.Failover) step {
	controllers := rc.kubelet.Processes(opcomponents.ControllerDeploymentName)
	fo.Mode, fo.Replicas = ev.Mode, max(len(controllers), 1)
	since := func() float64 { return time.Since(epoch).Seconds() }
	apply := func(ctx context.Context) error {
		target, holder, err := leader(ctx, rc.kube, rc.namespace, controllers, fo)
		if err != nil {
			return err
		}
		fo.StoppedAt = since()
		if err := rc.kubelet.StopReplica(opcomponents.ControllerDeploymentName, target, ev.Mode == scenario.RestartCrash, ev.Downtime.D()); err != nil {
			return err
		}
		if fo.Replicas == 1 {
			return nil
		}
		return waitLeaseTaken(ctx, rc.kube, rc.namespace, holder, fo, since)
	}
	return step{apply: apply}
}

// componentDown is the step of webhookDown and controllerDown in operator mode: the kubelet
// stops running the Deployment's pods for the window. Its effect is what the operator did with
// the webhook's registration meanwhile, into reg: removed once the component had been down for
// the fail-open grace, applied again once it was back (waited for up to registrationWait).
// The watch runs under ctx, which outlives the pass: the effect is read after the window.
func (rc *renderedComponents) componentDown(ctx context.Context, deployment string, hold time.Duration, reg *report.Registration) step {
	var w *registrationWatch
	var downAt, upAt time.Time
	apply := func(context.Context) error {
		var err error
		if w, err = watchRegistration(ctx, rc.kube.client, opcomponents.DefaultMutatingWebhookConfigurationName); err != nil {
			return err
		}
		downAt = time.Now()
		rc.kubelet.Hold(deployment)
		return nil
	}
	revert := func(context.Context) error {
		upAt = time.Now()
		rc.kubelet.Release(deployment)
		return nil
	}
	effect := func() (string, error) {
		defer w.stop()
		removed, returned := w.removedAndReturned(downAt, upAt.Add(removalSlack), registrationWait)
		reg.UnregisteredAfter, reg.ReregisteredAfter = -1, -1
		if removed.IsZero() {
			return "the webhook registration stayed (the window was shorter than the operator's fail-open grace)", nil
		}
		reg.UnregisteredAfter = removed.Sub(downAt).Seconds()
		if returned.IsZero() {
			return "", fmt.Errorf("the operator removed the webhook registration %.1fs after %s went down, and it was not back %s after %s returned",
				reg.UnregisteredAfter, deployment, registrationWait, deployment)
		}
		reg.ReregisteredAfter = max(returned.Sub(upAt).Seconds(), 0)
		return fmt.Sprintf("webhook registration removed %.1fs after %s went down, back %.1fs after it returned",
			reg.UnregisteredAfter, deployment, reg.ReregisteredAfter), nil
	}
	return step{apply: apply, revert: revert, hold: hold, effect: effect}
}

// registrationWait bounds the wait for the webhook registration's return after a component
// comes back: its pods start, turn ready, and the operator reconciles.
const registrationWait = 2 * time.Minute

// removalSlack is how long after a component comes back its registration may still be removed
// (its pods are not ready yet when the fail-open grace ends); a registration still there by
// then stays, so the wait ends instead of running out registrationWait.
const removalSlack = 15 * time.Second

// registrationWatch records when the webhook registration is deleted and created.
type registrationWatch struct {
	w      watch.Interface
	events chan registrationEvent
}

type registrationEvent struct {
	deleted bool
	at      time.Time
}

// watchRegistration watches the MutatingWebhookConfiguration name.
func watchRegistration(ctx context.Context, c kubernetes.Interface, name string) (*registrationWatch, error) {
	w, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Watch(ctx,
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return nil, fmt.Errorf("watching MutatingWebhookConfiguration %s: %w", name, err)
	}
	rw := &registrationWatch{w: w, events: make(chan registrationEvent, 64)}
	go func() {
		defer close(rw.events)
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted, watch.Added:
				rw.events <- registrationEvent{deleted: ev.Type == watch.Deleted, at: time.Now()}
			}
		}
	}()
	return rw, nil
}

// removedAndReturned returns when the registration was deleted after since, and when it was
// created after that (zero when not seen); it waits for the return for at most wait, and for
// the removal only until removedBy.
func (rw *registrationWatch) removedAndReturned(since, removedBy time.Time, wait time.Duration) (removed, returned time.Time) {
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	notRemoved := time.NewTimer(time.Until(removedBy))
	defer notRemoved.Stop()
	for {
		select {
		case <-notRemoved.C:
			if removed.IsZero() {
				return removed, returned
			}
		case ev, ok := <-rw.events:
			if !ok {
				return removed, returned
			}
			switch {
			case ev.deleted && removed.IsZero() && ev.at.After(since):
				removed = ev.at
			case !ev.deleted && !removed.IsZero():
				return removed, ev.at
			}
		case <-timeout.C:
			return removed, returned
		}
	}
}

func (rw *registrationWatch) stop() { rw.w.Stop() }

// configChange replaces the ClusterPodPlacementConfig's spec, as an admin edits it. Its effect
// is the rolling update of the webhook Deployment that the operator's new rendering causes:
// every replica replaced (waited for up to registrationWait); none means the change rolled
// nothing and the event tested nothing.
func (rc *renderedComponents) configChange(ctx context.Context, spec v1beta1.ClusterPodPlacementConfigSpec) step {
	var before int
	apply := func(ctx context.Context) error {
		before = rc.kubelet.Replaced(opcomponents.WebhookDeploymentName)
		return rc.admin.replace(ctx, spec)
	}
	effect := func() (string, error) {
		d, err := rc.kube.client.AppsV1().Deployments(rc.namespace).Get(ctx, opcomponents.WebhookDeploymentName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		want := int(ptr.Deref(d.Spec.Replicas, 1))
		deadline := time.Now().Add(registrationWait)
		for {
			n := rc.kubelet.Replaced(opcomponents.WebhookDeploymentName) - before
			if n >= want {
				return fmt.Sprintf("webhook Deployment rolled: %d replicas replaced", n), nil
			}
			if time.Now().After(deadline) {
				return "", fmt.Errorf("%d of %d webhook replicas replaced %s after the change", n, want, registrationWait)
			}
			time.Sleep(200 * time.Millisecond) // polling a bounded wait for the kubelet's count
		}
	}
	return step{apply: apply, effect: effect}
}
