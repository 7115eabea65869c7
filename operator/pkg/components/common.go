/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package components starts archgate's components in-process against a rest.Config: the
// scheduling-gate webhook (RunWebhook) and the pod placement controller
// (RunPlacementController). The archgate binary and the simulator both call exactly this code,
// so what the simulator measures is what runs in clusters.
//
// Options are structs passed by value; zero fields take the defaults documented on each field
// (applied in one place, withDefaults). Each Run function blocks until its context is done and
// returns nil after a clean shutdown. A component is started once per process unless
// Common.Restartable says otherwise (the simulator's --in-process mode restarts them).
package components

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/internal/collectors"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/internal/metricsauth"
	"github.com/archgate/archgate/operator/internal/version"
)

// Client rate limits of the components when Common.QPS and Burst are zero: the defaults of the
// archgate binary's --kube-api-qps and --kube-api-burst.
const (
	DefaultQPS   = cmdline.DefaultQPS
	DefaultBurst = cmdline.DefaultBurst
)

// Common are the options every component shares.
type Common struct {
	// Scheme knows the kinds the component reads and writes; nil means client-go's kinds plus
	// multiarch.openshift.io/v1beta1 (NewScheme).
	Scheme *runtime.Scheme
	// QPS and Burst are the client rate limits towards the apiserver; DefaultQPS and DefaultBurst
	// when zero. They override those of the rest.Config passed in, which is not modified.
	QPS   float32
	Burst int
	// MetricsBindAddress serves controller-runtime's metrics registry (":8443"); "" or "0"
	// serves nothing, which is the default for in-process use. The archgate binary defaults to
	// ":8443". Metrics are always served over HTTPS to authenticated and authorized clients
	// only: a bearer token the apiserver accepts (TokenReview) of a user allowed to get the
	// non-resource URL /metrics (SubjectAccessReview), e.g. bound to the archgate-metrics-reader
	// ClusterRole. The component's identity needs tokenreviews and subjectaccessreviews create.
	MetricsBindAddress string
	// MetricsCertDir holds the metrics server's tls.crt and tls.key (reloaded when they
	// change); when empty or without them, the server generates a self-signed certificate at
	// start, which scrapers cannot verify.
	MetricsCertDir string
	// HealthProbeBindAddress serves /healthz and /readyz; "" or "0" serves nothing.
	HealthProbeBindAddress string
	// EnableHTTP2 lets the webhook and metrics servers speak HTTP/2. Off by default: over
	// HTTP/2 the apiserver multiplexes every admission request on one connection, so one
	// webhook replica takes them all while the others idle, and HTTP/2 servers are exposed to
	// stream floods such as rapid reset (CVE-2023-44487). Over HTTP/1.1 the apiserver opens a
	// connection per concurrent request and spreads them over the replicas.
	EnableHTTP2 bool
	// PprofBindAddress serves net/http/pprof (CPU and heap profiles); "" or "0" serves nothing,
	// the default: profiles show internals and cost CPU while taken, so an admin opts in.
	PprofBindAddress string
	// Registerer receives the component's metrics; nil means controller-runtime's
	// metrics.Registry, which MetricsBindAddress serves. A metric registered twice is an error
	// unless Restartable is set.
	Registerer prometheus.Registerer
	// Restartable lets the component be started again in the same process after it stopped
	// (the simulator's --in-process mode): controller names need not be unique, podman's
	// process-wide registries.conf cache is dropped at start, and metrics already registered by
	// a previous instance are replaced (their counters restart at zero, as after a process
	// restart). Off, the default and what the archgate binary runs: a second instance in one
	// process is then a bug that fails loudly instead of silently replacing the first one's state.
	Restartable bool
	// Logger receives the component's logs; the zero Logger means the one in the context passed
	// to Run, or none.
	Logger logr.Logger
	// Ready, when set, is called once, from another goroutine, as soon as the component serves:
	// for the webhook when its TLS listener accepts connections, for the controller when it is
	// the leader and its caches are synced. The simulator uses it instead of polling.
	Ready func()
}

// NewScheme returns a scheme with client-go's kinds and multiarch.openshift.io/v1beta1.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (c Common) withDefaults(ctx context.Context) (Common, error) {
	if c.Scheme == nil {
		s, err := NewScheme()
		if err != nil {
			return c, err
		}
		c.Scheme = s
	}
	c.QPS = cmp.Or(max(c.QPS, 0), DefaultQPS)
	c.Burst = cmp.Or(max(c.Burst, 0), DefaultBurst)
	c.MetricsBindAddress = cmp.Or(c.MetricsBindAddress, "0")
	c.HealthProbeBindAddress = cmp.Or(c.HealthProbeBindAddress, "0")
	c.PprofBindAddress = cmp.Or(c.PprofBindAddress, "0")
	if c.Registerer == nil {
		c.Registerer = ctrlmetrics.Registry
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.FromContextOrDiscard(ctx)
	}
	if c.Logger.GetSink() == nil {
		// logr.Discard() has no sink, and the manager would then fall back to
		// controller-runtime's global logger (and warn that it was never set).
		c.Logger = logr.New(logf.NullLogSink{})
	}
	return c, nil
}

// options are the options of a component, as its start-up needs them.
type options[O any] interface {
	withDefaults(context.Context) (O, error)
	common() Common
}

func (c Common) common() Common { return c }

// start is how every Run function begins: opts with their defaults, the build announced as
// component, and a copy of cfg with the component's rate limits.
func start[O options[O]](ctx context.Context, cfg *rest.Config, opts O, component string) (O, *rest.Config, error) {
	opts, err := opts.withDefaults(ctx)
	if err != nil {
		return opts, nil, err
	}
	c := opts.common()
	if err := c.announce(component); err != nil {
		return opts, nil, err
	}
	restCfg, err := c.restConfig(cfg)
	return opts, restCfg, err
}

// announce logs the build's identity as component starts and registers its
// archgate_build_info: which version each replica runs is the first thing asked of a bug report.
func (c Common) announce(component string) error {
	info := version.Get()
	c.Logger.Info("Starting "+component, info.KeysAndValues()...)
	return collectors.Register(c.registerer(), info.Collector(component))
}

// restConfig returns a copy of cfg with the component's rate limits.
func (c Common) restConfig(cfg *rest.Config) (*rest.Config, error) {
	if cfg == nil {
		return nil, errors.New("components: nil rest.Config")
	}
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst = c.QPS, c.Burst
	return out, nil
}

// managerOptions returns the manager options every component uses. Controller names need not
// be unique only for a Restartable component.
func (c Common) managerOptions() manager.Options {
	return manager.Options{
		Scheme:                 c.Scheme,
		Logger:                 c.Logger,
		Metrics:                c.metricsServerOptions(),
		HealthProbeBindAddress: c.HealthProbeBindAddress,
		PprofBindAddress:       c.PprofBindAddress,
		Controller:             config.Controller{SkipNameValidation: ptr.To(c.Restartable)},
		// Without a logger of its own, the client logs API warnings to controller-runtime's
		// global logger (which warns that it was never set when an embedder does not set it).
		Client: client.Options{Log: c.Logger.WithName("client")},
		// Stop within a bounded time even if a reconciler hangs on a registry.
		GracefulShutdownTimeout: ptr.To(operator.ShutdownTimeout),
	}
}

// metricsServerOptions serve the metrics over HTTPS to clients the apiserver authenticates and
// authorizes (internal/metricsauth: a TokenReview, then a SubjectAccessReview of "get
// /metrics", both cached briefly). There is deliberately no plain-HTTP option: the metrics name
// namespaces, images and registries.
func (c Common) metricsServerOptions() metricsserver.Options {
	return metricsserver.Options{
		BindAddress:    c.MetricsBindAddress,
		SecureServing:  true,
		FilterProvider: metricsauth.FilterProvider,
		CertDir:        c.MetricsCertDir,
		CertName:       TLSCertName,
		KeyName:        TLSKeyName,
		TLSOpts:        c.tlsOpts(),
	}
}

// tlsOpts are the TLS settings of the component's servers: HTTP/1.1 only unless EnableHTTP2.
func (c Common) tlsOpts() []func(*tls.Config) {
	if c.EnableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(cfg *tls.Config) { cfg.NextProtos = []string{"http/1.1"} }}
}

// probes say when a component is ready.
type probes struct {
	// check answers /readyz.
	check func() error
	// wait, when set, blocks until check holds (a push, e.g. the cache's WaitForCacheSync);
	// without it the Ready callback polls check.
	wait func(context.Context) bool
	// onReady is the component's Ready callback; nil: none.
	onReady func()
	// needsLeader delays onReady until this replica leads.
	needsLeader bool
}

// addProbes installs the liveness check and the readiness check, and, when p.onReady is set,
// calls it once the component is ready: /readyz and the in-process Ready callback answer the
// same question.
func addProbes(mgr manager.Manager, p probes) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the liveness check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ready", func(*http.Request) error { return p.check() }); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	if p.onReady == nil {
		return nil
	}
	return mgr.Add(readyNotifier{check: p.check, wait: p.wait, ready: p.onReady, needsLeader: p.needsLeader})
}

// registerer is where the component registers its metrics: Registerer, which replaces those
// of a previous instance only when the component is Restartable.
func (c Common) registerer() prometheus.Registerer {
	if c.Restartable {
		return replacingRegisterer{c.Registerer}
	}
	return c.Registerer
}

// replacingRegisterer registers collectors, replacing an equal one already registered (a
// component restarted in the same process) instead of failing.
type replacingRegisterer struct {
	prometheus.Registerer
}

// Register registers c, replacing an already registered collector with the same descriptors.
func (r replacingRegisterer) Register(c prometheus.Collector) error {
	err := r.Registerer.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		r.Registerer.Unregister(are.ExistingCollector)
		return r.Registerer.Register(c)
	}
	return err
}

// MustRegister registers cs and panics on error.
func (r replacingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// readyNotifier calls ready once wait returns true or, without wait, once check succeeds; it
// runs as a manager runnable.
type readyNotifier struct {
	check         func() error
	wait          func(context.Context) bool
	ready         func()
	needsLeader   bool
	checkInterval time.Duration
}

var (
	_ manager.Runnable               = readyNotifier{}
	_ manager.LeaderElectionRunnable = readyNotifier{}
)

// NeedLeaderElection reports whether the notifier waits for leadership before it checks.
func (n readyNotifier) NeedLeaderElection() bool { return n.needsLeader }

// Start waits (or, without wait, polls check) until the component is ready, calls ready, and
// returns. Polling is left for the webhook server, which offers only a check.
func (n readyNotifier) Start(ctx context.Context) error {
	if n.wait != nil {
		if n.wait(ctx) {
			n.ready()
		}
		return nil
	}
	t := time.NewTicker(cmp.Or(n.checkInterval, 20*time.Millisecond))
	defer t.Stop()
	for {
		if n.check() == nil {
			n.ready()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
