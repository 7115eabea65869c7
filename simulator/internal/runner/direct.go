package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	opcomponents "github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// directComponents is direct mode: the webhook and the controller started with the scenario's
// settings, as processes of the archgate binary or (without one) in the simulator's process,
// and the webhook registered by the run. A component that stops is an error of the run;
// the timeline stops and starts them itself.
type directComponents struct {
	kube  *kube
	admin *adminConfig
	op    *operand.WebhookAndController
	// cfg and caPEM are the components' settings and the webhooks' CA, for the namespaces'
	// local components (clusterConfig.localPlacement: Enabled).
	cfg      operand.Config
	caPEM    []byte
	local    bool
	cleanups cleanups
}

// startDirect writes the admin's objects, starts the controller, then the webhook, registers
// the webhook (and the admission policy the operator would render) and waits until it gates
// pods.
func (c *simulatedCluster) startDirect(ctx context.Context, probe probe) (components, error) {
	reg := c.registry()
	reg.ca = nil // the components read the registry's CA from CertsDir, not from a ConfigMap
	admin, err := c.configure(ctx, reg)
	if err != nil {
		return nil, err
	}
	cfg, caPEM, err := c.directConfig(ctx, admin)
	if err != nil {
		return nil, err
	}
	op, err := operand.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("operator.enabled: %w", err)
	}
	dc := &directComponents{kube: c.kube, admin: admin, op: op, cfg: cfg, caPEM: caPEM,
		local: c.s.Operator.ClusterConfig.LocalPlacementEnabled()}
	c.cleanups.add(dc.cleanups.run)
	if err := dc.start(ctx); err != nil {
		return nil, err
	}
	return dc, probe.waitGated(ctx, c.kube.crc, reg.host, directGateWait)
}

// directConfig is how the webhook and the controller run: the scenario's settings, the
// registry's certificates, a self-signed serving certificate for the webhook (its CA is
// returned) and, with an archgate binary, as processes.
func (c *simulatedCluster) directConfig(ctx context.Context, admin *adminConfig) (operand.Config, []byte, error) {
	cfg := c.operandConfig(admin)
	policy, err := admissionPolicyWanted(&c.s.Operator.ClusterConfig, c.kube.crc)
	if err != nil {
		return cfg, nil, err
	}
	if policy {
		cfg.PlacementParameters = opcomponents.DefaultPlacementParametersConfigMap
	}
	if *c.s.Registry.TLS {
		cfg.CertsDir = filepath.Join(c.dir, "certs.d")
		if _, err := c.reg.reg.WriteCertsDir(cfg.CertsDir); err != nil {
			return cfg, nil, err
		}
	}
	cfg.WebhookCertDir = filepath.Join(c.dir, "webhook")
	if err := os.MkdirAll(cfg.WebhookCertDir, 0o700); err != nil {
		return cfg, nil, err
	}
	caPEM, err := opcomponents.WriteSelfSignedServingCert(cfg.WebhookCertDir, 24*time.Hour, cfg.WebhookHost)
	if err != nil {
		return cfg, nil, err
	}
	ports, err := operand.FreePorts(cfg.WebhookHost, 1)
	if err != nil {
		return cfg, nil, err
	}
	cfg.WebhookPort = ports[0]
	if c.opts.Archgate == "" {
		return cfg, caPEM, nil
	}
	env, err := c.processEnv()
	if err != nil {
		return cfg, nil, err
	}
	cfg.Binary, cfg.Kubeconfig, cfg.LogDir, cfg.OnStart = env.binary, env.kubeconfig, env.logs, env.watch
	token, err := metricsToken(ctx, c.kube, c.s.Operator.Namespace)
	if err != nil {
		return cfg, nil, err
	}
	cfg.MetricsAuth = &operand.MetricsAuth{Token: token, CA: caPEM}
	return cfg, caPEM, nil
}

// operandConfig is the scenario's settings of the components.
func (c *simulatedCluster) operandConfig(admin *adminConfig) operand.Config {
	o := c.s.Operator
	cfg := operand.Config{
		RestConfig:         c.kube.cfg,
		Namespace:          o.Namespace,
		WebhookHost:        "127.0.0.1",
		GlobalPullSecret:   admin.globalPullSecret(),
		InsecureRegistry:   !*c.s.Registry.TLS,
		Workers:            o.Workers,
		InspectWorkers:     o.InspectWorkers,
		QPS:                o.QPS,
		Burst:              o.Burst,
		RetryBaseDelay:     o.RetryBaseDelay.D(),
		RetryMaxDelay:      o.RetryMaxDelay.D(),
		NamespaceSelector:  o.ClusterConfig.NamespaceSelector,
		Logger:             c.opts.Logger,
		ControllerReplicas: o.ControllerReplicas,
		// Resolved as the operator resolves it for a deployed controller.
		ImageInspection:        o.ClusterConfig.ImageInspection.Settings(),
		ExecFormatErrorMonitor: o.ClusterConfig.Plugins.ExecFormatErrorMonitorEnabled(),
	}
	if o.ClusterConfig.AdmissionPlacementEnabled() {
		cfg.KnownImagesConfigMap = opcomponents.DefaultKnownImagesConfigMap
	}
	return cfg
}

// start starts the controller instances, then the webhook, and registers the webhook
// (trusting caPEM) and the admission policy with the apiserver.
func (dc *directComponents) start(ctx context.Context) error {
	if err := dc.startControllers(ctx); err != nil {
		return err
	}
	if err := dc.op.Webhook.Start(ctx); err != nil {
		return err
	}
	dc.cleanups.add(dc.op.Webhook.Stop)
	baseURL := "https://" + net.JoinHostPort(dc.cfg.WebhookHost, strconv.Itoa(dc.cfg.WebhookPort))
	if err := dc.register(ctx, dc.op.WebhookConfiguration(baseURL, dc.caPEM), "registering the webhook"); err != nil {
		return err
	}
	if dc.cfg.PlacementParameters == "" {
		return nil
	}
	policy, binding := opcomponents.AdmissionPolicy(opcomponents.AdmissionPolicyOptions{
		Name: admissionPolicyName, OperatorNamespace: dc.cfg.Namespace,
		Parameters: opcomponents.DefaultPlacementParametersConfigMap, Cluster: dc.admin.clusterConfig(dc.admin.spec),
	})
	for _, obj := range []crclient.Object{policy, binding} {
		if err := dc.register(ctx, obj, "registering the admission policy"); err != nil {
			return err
		}
	}
	return nil
}

// register creates obj, removed when the components stop; what names the step in the error.
func (dc *directComponents) register(ctx context.Context, obj crclient.Object, what string) error {
	if err := dc.kube.crc.Create(ctx, obj); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	dc.cleanups.add(func() { _ = dc.kube.crc.Delete(context.Background(), obj) })
	return nil
}

// startControllers starts the controller instances, the first before the
// others so that it takes the lease.
func (dc *directComponents) startControllers(ctx context.Context) error {
	controllers := []operand.Component{dc.op.Controller}
	for _, p := range dc.op.Controllers[min(1, len(dc.op.Controllers)):] {
		controllers = append(controllers, p)
	}
	for _, c := range controllers {
		if err := c.Start(ctx); err != nil {
			return err
		}
		dc.cleanups.add(c.Stop)
	}
	return nil
}

// admissionPolicyName names the admission policy and binding the simulator registers.
const admissionPolicyName = "archgate-simulator-placement"

// admissionPolicyWanted reports whether the operator would render the admission policy for the
// scenario's cluster config on this apiserver: the spec asks for it and the API is served.
func admissionPolicyWanted(spec *v1beta1.ClusterPodPlacementConfigSpec, crc crclient.Client) (bool, error) {
	if ok, _ := opcomponents.AdmissionPolicyWanted(spec); !ok {
		return false, nil
	}
	return opcomponents.AdmissionPolicyServed(crc.RESTMapper())
}

// err reports a component that stopped on its own: every one is the run's to keep running.
func (dc *directComponents) err() error {
	errs := []error{dc.op.Controller.Err(), dc.op.Webhook.Err()}
	for _, p := range dc.op.Controllers {
		errs = append(errs, p.Err())
	}
	return errors.Join(errs...)
}

func (dc *directComponents) processes() []*operand.Process { return dc.op.Processes() }

func (dc *directComponents) count() componentCount { return counting(dc.op.Counters, nil) }

// startLocal starts ns's local controller and webhook and registers the webhook, as the operator
// does for the first PodPlacementConfig of a namespace; they stop with the components.
func (dc *directComponents) startLocal(ctx context.Context, ns string) error {
	if !dc.local {
		return nil
	}
	l, err := operand.NewLocal(dc.cfg, ns)
	if err != nil {
		return fmt.Errorf("local components of %s: %w", ns, err)
	}
	for _, c := range []operand.Operand{l.Controller, l.Webhook} {
		if err := c.Start(ctx); err != nil {
			return fmt.Errorf("local components of %s: %w", ns, err)
		}
		dc.cleanups.add(c.Stop)
	}
	return dc.register(ctx, l.WebhookConfiguration(dc.caPEM), "registering the local webhook of "+ns)
}

func (dc *directComponents) step(ctx context.Context, ev scenario.Event, epoch time.Time, rec *report.AppliedEvent) (step, bool) {
	switch {
	case ev.ControllerRestart != nil:
		rec.Failover = &report.Failover{}
		return dc.controllerRestart(ctx, ev.ControllerRestart, epoch, rec.Failover), true
	case ev.WebhookDown != nil:
		stop := func(context.Context) error { dc.op.Webhook.Stop(); return nil }
		start := func(context.Context) error { return dc.op.Webhook.Start(ctx) }
		return step{apply: stop, revert: start, hold: ev.WebhookDown.Duration.D()}, true
	}
	return dc.admin.step(ev)
}

// controllerRestart builds the controllerRestart step. With one instance
// it stops (SIGTERM, or SIGKILL in crash mode) and starts it again, under ctx, after the
// downtime. With a standby it stops the leader the same way and waits until
// the standby holds the lease; the stopped instance comes back as the new
// standby after the downtime. The failover record is filled as it goes;
// ResumedAt comes later from the recorder (resumedAfter).
func (dc *directComponents) controllerRestart(ctx context.Context, ev *scenario.RestartEvent, epoch time.Time, fo *report.Failover) step {
	fo.Mode, fo.Replicas = ev.Mode, max(len(dc.op.Controllers), 1)
	since := func() float64 { return time.Since(epoch).Seconds() }
	var stopped operand.Component
	apply := func(pctx context.Context) error {
		target, holder := dc.op.Controller, ""
		if fo.Replicas > 1 {
			p, h, err := leader(pctx, dc.kube, dc.cfg.Namespace, dc.op.Controllers, fo)
			if err != nil {
				return err
			}
			target, holder = p, h
		}
		fo.StoppedAt = since()
		if err := stopComponent(target, ev.Mode); err != nil {
			return err
		}
		stopped = target
		if fo.Replicas == 1 {
			return nil
		}
		return waitLeaseTaken(pctx, dc.kube, dc.cfg.Namespace, holder, fo, since)
	}
	start := func(context.Context) error {
		if stopped == nil {
			return nil
		}
		err := stopped.Start(ctx)
		if fo.Replicas == 1 && err == nil {
			fo.AcquiredAt = since()
		}
		return err
	}
	return step{apply: apply, revert: start, hold: ev.Downtime.D()}
}
