package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/simulator/internal/kubelet"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/report"
)

// Names of what the simulator writes as the cluster admin in operator mode.
const (
	// registryCertsConfigMap holds the fake registry's CA for
	// spec.registryCertsConfigmapRef, keyed "<host>..<port>".
	registryCertsConfigMap = "sim-registry-certs"
	// simImage is the image the operator renders into the components'
	// Deployments; package kubelet runs the archgate binary for it.
	simImage = "archgate.sim.invalid/archgate:sim"
	// operatorComponent names the operator's process in logs and costs.
	operatorComponent = "operator"
)

// operatorMode reports whether the run starts the operator (rather than the components directly).
func (e *operatorEnv) operatorMode() bool {
	return e.r.s.Operator.Mode == "" || e.r.s.Operator.Mode == "operator"
}

// startOperatorMode runs the operator as a cluster would: the admin's objects (the registry CA
// ConfigMap; the pull secret and the ClusterPodPlacementConfig were created by prepareCluster),
// `archgate operator` as a process with the arguments of deploy/, and package kubelet, which
// starts the components from the Deployments the operator renders.
func (e *operatorEnv) startOperatorMode(ctx context.Context) error {
	r := e.r
	if r.opts.Archgate == "" {
		return errors.New("operator.mode operator runs the components from the operator's Deployments as processes of the archgate binary: " +
			"pass --archgate (make archgate), or set operator.mode: direct to run them in-process")
	}
	hostIP, err := kubelet.HostIP()
	if err != nil {
		return err
	}
	kc, err := r.kubeconfig()
	if err != nil {
		return err
	}
	logs, err := r.logDir()
	if err != nil {
		return err
	}
	token, err := e.metricsToken(ctx)
	if err != nil {
		return err
	}
	e.counters = operand.NewCounters()
	e.kubelet = kubelet.New(kubelet.Options{
		Client: r.client, Namespace: r.s.Operator.Namespace, Binary: r.opts.Archgate, HostIP: hostIP,
		Kubeconfig: kc, Dir: filepath.Join(r.tmp, "pods"), LogDir: logs, Counters: e.counters,
		MetricsAuth: &operand.MetricsAuth{Token: token, SkipVerify: true},
		Pprof:       r.opts.ProfileDir != "",
		OnStart:     func(component string, pid int) { r.sampler.Watch(pid, component) },
		Logf:        r.logf,
	})
	kctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- e.kubelet.Run(kctx) }()
	r.defer_(func() { cancel(); <-done })
	op, err := e.operatorProcess(kc, logs)
	if err != nil {
		return err
	}
	if err := op.Start(ctx); err != nil {
		return fmt.Errorf("starting the operator: %w", err)
	}
	e.operator = op
	r.defer_(op.Stop)
	return nil
}

// operatorProcess is `archgate operator` with deploy/base/operator.yaml's arguments (its
// validating webhooks are served but not registered: the simulator installs the CRDs only),
// plus the scenario's --fail-open-grace-period.
func (e *operatorEnv) operatorProcess(kubeconfig, logs string) (*operand.Process, error) {
	r := e.r
	ports, err := operand.FreePorts("127.0.0.1", 3)
	if err != nil {
		return nil, err
	}
	addr := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	args := []string{r.opts.Archgate, "operator", "--kubeconfig", kubeconfig,
		"--operator-namespace=" + r.s.Operator.Namespace, "--image=" + simImage,
		"--leader-elect", "--cert-provider=self-signed",
		"--webhook-host=127.0.0.1", "--webhook-port=" + strconv.Itoa(ports[0]),
		"--metrics-bind-address=" + addr(ports[1]), "--health-probe-bind-address=" + addr(ports[2])}
	if d := r.s.Operator.FailOpenGracePeriod.D(); d > 0 {
		args = append(args, "--fail-open-grace-period="+d.String())
	}
	return &operand.Process{
		Name: operatorComponent, Command: args,
		// No proxy variables: the operator would pass them on to the components.
		Env:      []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		ReadyURL: "http://" + addr(ports[2]) + "/readyz",
		LogPath:  filepath.Join(logs, "operator.log"),
		OnStart:  func(pid int) { r.sampler.Watch(pid, operatorComponent) },
	}, nil
}

// registryCertsRef writes the registry's CA into a ConfigMap of the operator's namespace, in the
// layout spec.registryCertsConfigmapRef wants, and returns the reference.
func (e *operatorEnv) registryCertsRef(ctx context.Context) (*v1beta1.NamespacedObjectReference, error) {
	ns := e.r.s.Operator.Namespace
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: registryCertsConfigMap},
		Data:       map[string]string{strings.Replace(e.reg.Host(), ":", "..", 1): string(e.reg.CACertPEM())},
	}
	if err := e.crc.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating ConfigMap %s/%s: %w", ns, cm.Name, err)
	}
	return &v1beta1.NamespacedObjectReference{Namespace: ns, Name: registryCertsConfigMap}, nil
}

// componentDown is the step of webhookDown and controllerDown in operator mode: the kubelet
// stops running the Deployment's pods for the window. Its effect is what the operator did with
// the webhook's registration meanwhile, into reg: removed once the component had been down for
// the fail-open grace, applied again once it was back (waited for up to registrationWait).
func (e *operatorEnv) componentDown(deployment string, hold time.Duration, reg *report.Registration) step {
	var w *registrationWatch
	var downAt, upAt time.Time
	apply := func(ctx context.Context) error {
		var err error
		if w, err = watchRegistration(e.ctx, e.r.client, components.DefaultMutatingWebhookConfigurationName); err != nil {
			return err
		}
		downAt = time.Now()
		e.kubelet.Hold(deployment)
		return nil
	}
	revert := func(context.Context) error {
		upAt = time.Now()
		e.kubelet.Release(deployment)
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
func (e *operatorEnv) configChange(spec v1beta1.ClusterPodPlacementConfigSpec) step {
	var before int
	apply := func(ctx context.Context) error {
		before = e.kubelet.Replaced(components.WebhookDeploymentName)
		want := e.clusterConfigFrom(spec)
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &v1beta1.ClusterPodPlacementConfig{}
			if err := e.crc.Get(ctx, crclient.ObjectKey{Name: v1beta1.SingletonName}, cur); err != nil {
				return err
			}
			cur.Spec = want.Spec
			return e.crc.Update(ctx, cur)
		})
	}
	effect := func() (string, error) {
		d, err := e.r.client.AppsV1().Deployments(e.r.s.Operator.Namespace).Get(e.ctx, components.WebhookDeploymentName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		want := int(ptr.Deref(d.Spec.Replicas, 1))
		deadline := time.Now().Add(registrationWait)
		for {
			n := e.kubelet.Replaced(components.WebhookDeploymentName) - before
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

// rolloutWait bounds the wait for the operator's first rollout: the webhook's and the
// controller's replicas start one after another and each syncs its caches.
const rolloutWait = 2 * time.Minute

// waitRolledOut waits, as `kubectl wait` would, until the ClusterPodPlacementConfig says every
// component runs the latest configuration on all its replicas (Available True, Progressing
// False, for its current generation), and until a controller replica holds the lease. Before
// that, replicas are still starting and syncing their caches, and a pass would measure their
// start-up: the first pods wait for a leader, and the scheduler for the CPU.
func (e *operatorEnv) waitRolledOut(ctx context.Context) error {
	leases := e.r.client.CoordinationV1().Leases(e.r.s.Operator.Namespace)
	deadline := time.Now().Add(rolloutWait)
	for {
		var cppc v1beta1.ClusterPodPlacementConfig
		why := ""
		if err := e.crc.Get(ctx, crclient.ObjectKey{Name: v1beta1.SingletonName}, &cppc); err != nil {
			why = err.Error()
		} else {
			why = notRolledOut(&cppc)
		}
		if why == "" {
			lease, err := leases.Get(ctx, components.DefaultLeaderElectionID, metav1.GetOptions{})
			switch {
			case err != nil:
				why = "reading the controller's lease: " + err.Error()
			case ptr.Deref(lease.Spec.HolderIdentity, "") == "":
				why = "no controller replica holds the lease " + components.DefaultLeaderElectionID
			}
		}
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator did not roll its components out within %s: %s%s", rolloutWait, why, e.kubeletErr())
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// notRolledOut says why the ClusterPodPlacementConfig does not report a finished rollout, or
// "" when it does; a pure rule.
func notRolledOut(c *v1beta1.ClusterPodPlacementConfig) string {
	if c.Status.ObservedGeneration < c.Generation {
		return fmt.Sprintf("ClusterPodPlacementConfig %s: status.observedGeneration %d, generation %d", c.Name, c.Status.ObservedGeneration, c.Generation)
	}
	for _, want := range []struct {
		condition string
		status    metav1.ConditionStatus
	}{{v1beta1.ConditionAvailable, metav1.ConditionTrue}, {v1beta1.ConditionProgressing, metav1.ConditionFalse}} {
		got := meta.FindStatusCondition(c.Status.Conditions, want.condition)
		switch {
		case got == nil:
			return fmt.Sprintf("ClusterPodPlacementConfig %s: no %s condition yet", c.Name, want.condition)
		case got.Status != want.status || got.ObservedGeneration < c.Generation:
			return fmt.Sprintf("ClusterPodPlacementConfig %s: %s is %s (%s) for generation %d, want %s for %d",
				c.Name, want.condition, got.Status, got.Message, got.ObservedGeneration, want.status, c.Generation)
		}
	}
	return ""
}
