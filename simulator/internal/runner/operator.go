package runner

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/testing/metricsreader"
	"github.com/archgate/archgate/simulator/internal/blackhole"
	"github.com/archgate/archgate/simulator/internal/kubelet"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// registryUser is the registry account pull secrets carry.
const registryUser = "sim"

// globalPullSecretName is the global pull secret in the operator namespace.
const globalPullSecretName = "sim-global-pull"

// operatorEnv is the registry and the operator of a run.
type operatorEnv struct {
	r          *run
	ctx        context.Context // outlives passes: restarted components use it
	reg        *fakeregistry.Registry
	op         *operand.WebhookAndController
	crc        crclient.Client
	baseFaults fakeregistry.Faults
	password   string
	authMode   fakeregistry.AuthMode
	mu         sync.Mutex
	countBase  operand.Snapshot
	// cfg and caPEM are the components' settings and the webhooks' CA, for the namespaces' local
	// components (clusterConfig.localPlacement: Enabled).
	cfg   operand.Config
	caPEM []byte
	// counters sums the components' Prometheus counters (both modes).
	counters *operand.Counters
	// kubelet and operator run the components in operator mode; op in direct mode.
	kubelet  *kubelet.Kubelet
	operator *operand.Process
	// certsRef is the ClusterPodPlacementConfig's registryCertsConfigmapRef in operator mode.
	certsRef *v1beta1.NamespacedObjectReference
	// hang is the attacker's host that never answers; nil without such attack pods.
	hang *blackhole.Host
	// exitBase and oomBase are the kubelet's restart counts when the pass's counters were reset.
	exitBase, oomBase map[string]int
}

// registryHost is the host pods' image references point at; without the
// operator no registry runs and the references only need to be well-formed.
func (r *run) registryHost() string {
	if r.ext != nil {
		return r.ext.opts.Registry
	}
	if r.op != nil {
		return r.op.reg.Host()
	}
	return "registry.sim.invalid:5000"
}

// hangHost is the host of the attacker's images that never answer. A pass
// without the operator (before it starts) asks no registry: a name that
// resolves nowhere stands for it, as registryHost's does.
func (r *run) hangHost() string {
	if r.op == nil || r.op.hang == nil {
		return "hang.sim.invalid:5000"
	}
	return r.op.hang.Addr()
}

// startOperator starts the fake registry, creates the operator's namespace,
// secrets and ClusterPodPlacementConfig, starts the controller and the
// webhook and registers the webhook with the apiserver.
func (r *run) startOperator(ctx context.Context) error {
	e := &operatorEnv{r: r, ctx: ctx}
	if err := e.startRegistry(ctx); err != nil {
		return err
	}
	global, err := e.prepareCluster(ctx)
	if err != nil {
		return err
	}
	if e.operatorMode() {
		if err := e.startOperatorMode(ctx); err != nil {
			return err
		}
		r.op = e
		if err := e.waitRolledOut(ctx); err != nil {
			return err
		}
		return e.waitWebhookEffective(ctx)
	}
	cfg, caPEM, err := e.componentsConfig(ctx, global)
	if err != nil {
		return err
	}
	if err := e.startComponents(ctx, cfg, caPEM); err != nil {
		return err
	}
	r.op = e
	return e.waitWebhookEffective(ctx)
}

// startRegistry starts the fake registry with the scenario's faults and auth.
func (e *operatorEnv) startRegistry(ctx context.Context) error {
	r, s := e.r, e.r.s
	faults, err := baseFaults(s)
	if err != nil {
		return err
	}
	if attacks(s, scenario.AttackImagesHang) {
		if e.hang, err = blackhole.Listen(); err != nil {
			return fmt.Errorf("starting the attacker's host: %w", err)
		}
		r.defer_(func() { _ = e.hang.Close() })
	}
	e.baseFaults = faults
	opts := fakeregistry.Options{Catalog: r.opts.Scenario.Catalog, TLS: *s.Registry.TLS, Faults: faults, Seed: s.Seed}
	if a := s.Registry.Auth; a != nil {
		e.password = randomHex(12)
		e.authMode = fakeregistry.AuthMode(a.Mode)
		opts.Auth = fakeregistry.Auth{
			Mode:      e.authMode,
			Users:     map[string]fakeregistry.User{registryUser: {Password: e.password, Repositories: []string{"**"}}},
			Anonymous: a.Anonymous,
		}
	}
	e.reg, err = fakeregistry.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("starting the registry: %w", err)
	}
	r.defer_(func() { _ = e.reg.Close() })
	return nil
}

// prepareCluster creates the operator's namespace, the global pull secret (returned, nil when
// the scenario has none) and the ClusterPodPlacementConfig.
func (e *operatorEnv) prepareCluster(ctx context.Context) (*types.NamespacedName, error) {
	r, s := e.r, e.r.s
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1beta1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	var err error
	if e.crc, err = crclient.New(r.cfg, crclient.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Operator.Namespace}}
	if err := e.crc.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the operator namespace: %w", err)
	}
	var global *types.NamespacedName
	if s.Operator.GlobalPullSecret {
		global = &types.NamespacedName{Namespace: s.Operator.Namespace, Name: globalPullSecretName}
		if err := e.createPullSecret(ctx, global.Namespace, global.Name); err != nil {
			return nil, err
		}
	}
	if e.operatorMode() && *s.Registry.TLS {
		if e.certsRef, err = e.registryCertsRef(ctx); err != nil {
			return nil, err
		}
	}
	return global, e.createClusterConfig(ctx)
}

// componentsConfig is how the webhook and the controller run: the scenario's settings, the
// registry's certificates, a self-signed serving certificate for the webhook (its CA is
// returned) and, with an archgate binary, as processes.
func (e *operatorEnv) componentsConfig(ctx context.Context, global *types.NamespacedName) (operand.Config, []byte, error) {
	r, s := e.r, e.r.s
	cfg := operand.Config{
		RestConfig:         r.cfg,
		Namespace:          s.Operator.Namespace,
		WebhookHost:        "127.0.0.1",
		GlobalPullSecret:   global,
		InsecureRegistry:   !*s.Registry.TLS,
		Workers:            s.Operator.Workers,
		InspectWorkers:     s.Operator.InspectWorkers,
		QPS:                s.Operator.QPS,
		Burst:              s.Operator.Burst,
		RetryBaseDelay:     s.Operator.RetryBaseDelay.D(),
		RetryMaxDelay:      s.Operator.RetryMaxDelay.D(),
		NamespaceSelector:  s.Operator.ClusterConfig.NamespaceSelector,
		Logger:             r.opts.Logger,
		ControllerReplicas: s.Operator.ControllerReplicas,
		// Resolved as the operator resolves it for a deployed controller.
		ImageInspection:        s.Operator.ClusterConfig.ImageInspection.Settings(),
		ExecFormatErrorMonitor: s.Operator.ClusterConfig.Plugins.ExecFormatErrorMonitorEnabled(),
	}
	if s.Operator.ClusterConfig.AdmissionPlacementEnabled() {
		cfg.KnownImagesConfigMap = components.DefaultKnownImagesConfigMap
	}
	policy, err := e.admissionPolicyWanted()
	if err != nil {
		return cfg, nil, err
	}
	if policy {
		cfg.PlacementParameters = components.DefaultPlacementParametersConfigMap
	}
	if *s.Registry.TLS {
		cfg.CertsDir = filepath.Join(r.tmp, "certs.d")
		if _, err := e.reg.WriteCertsDir(cfg.CertsDir); err != nil {
			return cfg, nil, err
		}
	}
	cfg.WebhookCertDir = filepath.Join(r.tmp, "webhook")
	if err := os.MkdirAll(cfg.WebhookCertDir, 0o700); err != nil {
		return cfg, nil, err
	}
	caPEM, err := components.WriteSelfSignedServingCert(cfg.WebhookCertDir, 24*time.Hour, cfg.WebhookHost)
	if err != nil {
		return cfg, nil, err
	}
	ports, err := operand.FreePorts(cfg.WebhookHost, 1)
	if err != nil {
		return cfg, nil, err
	}
	cfg.WebhookPort = ports[0]
	if r.opts.Archgate != "" {
		cfg.Binary = r.opts.Archgate
		if cfg.Kubeconfig, err = r.kubeconfig(); err != nil {
			return cfg, nil, err
		}
		if cfg.LogDir, err = r.logDir(); err != nil {
			return cfg, nil, err
		}
		cfg.OnStart = func(name string, pid int) { r.sampler.Watch(pid, name) }
		token, err := e.metricsToken(ctx)
		if err != nil {
			return cfg, nil, err
		}
		cfg.MetricsAuth = &operand.MetricsAuth{Token: token, CA: caPEM}
	}
	return cfg, caPEM, nil
}

// metricsReaderServiceAccount is the ServiceAccount the simulator scrapes the components'
// metrics as, bound to the metrics reader ClusterRole like a cluster's Prometheus.
const metricsReaderServiceAccount = "archgate-simulator-metrics"

// metricsToken grants the metrics reader role to a ServiceAccount of the operator's namespace
// and returns a token of it from the TokenRequest API, valid for a day (longer than any run).
func (e *operatorEnv) metricsToken(ctx context.Context) (string, error) {
	reader := metricsreader.Reader{Namespace: e.r.s.Operator.Namespace, ServiceAccount: metricsReaderServiceAccount}
	if err := metricsreader.Grant(ctx, e.r.cfg, reader); err != nil {
		return "", fmt.Errorf("granting the metrics reader role: %w", err)
	}
	return metricsreader.Token(ctx, e.r.cfg, reader, 24*time.Hour)
}

// startComponents starts the controller, then the webhook, and registers the webhook (trusting
// caPEM) with the apiserver.
func (e *operatorEnv) startComponents(ctx context.Context, cfg operand.Config, caPEM []byte) error {
	r := e.r
	var err error
	e.cfg, e.caPEM = cfg, caPEM
	e.op, err = operand.New(cfg)
	if err != nil {
		return fmt.Errorf("operator.enabled: %w", err)
	}
	e.counters = e.op.Counters
	if err := e.startControllers(ctx); err != nil {
		return err
	}
	if err := e.op.Webhook.Start(ctx); err != nil {
		return err
	}
	r.defer_(e.op.Webhook.Stop)
	baseURL := "https://" + net.JoinHostPort(cfg.WebhookHost, strconv.Itoa(cfg.WebhookPort))
	mwc := e.op.WebhookConfiguration(baseURL, caPEM)
	if err := e.crc.Create(ctx, mwc); err != nil {
		return fmt.Errorf("registering the webhook: %w", err)
	}
	r.defer_(func() { _ = e.crc.Delete(context.Background(), mwc) })
	if cfg.PlacementParameters != "" {
		return e.registerAdmissionPolicy(ctx)
	}
	return nil
}

// admissionPolicyName names the admission policy and binding the simulator registers.
const admissionPolicyName = "archgate-simulator-placement"

// admissionPolicyWanted reports whether the operator would render the admission policy for the
// scenario's cluster config on this apiserver: the spec asks for it and the API is served.
func (e *operatorEnv) admissionPolicyWanted() (bool, error) {
	if ok, _ := components.AdmissionPolicyWanted(&e.r.s.Operator.ClusterConfig); !ok {
		return false, nil
	}
	return components.AdmissionPolicyServed(e.crc.RESTMapper())
}

// registerAdmissionPolicy creates the admission policy and its binding as the operator renders
// them; they are removed when the run ends.
func (e *operatorEnv) registerAdmissionPolicy(ctx context.Context) error {
	policy, binding := components.AdmissionPolicy(components.AdmissionPolicyOptions{
		Name: admissionPolicyName, OperatorNamespace: e.r.s.Operator.Namespace,
		Parameters: components.DefaultPlacementParametersConfigMap, Cluster: e.clusterConfig(),
	})
	for _, obj := range []crclient.Object{policy, binding} {
		if err := e.crc.Create(ctx, obj); err != nil {
			return fmt.Errorf("registering the admission policy: %w", err)
		}
		e.r.defer_(func() { _ = e.crc.Delete(context.Background(), obj) })
	}
	return nil
}

// waitWebhookEffective dry-runs pod creations until the apiserver calls the
// webhook and the pod comes back gated (or placed at admission).
func (e *operatorEnv) waitWebhookEffective(ctx context.Context) error {
	// In operator mode the operator rolls the components out first.
	wait := 30 * time.Second
	if e.op == nil {
		wait = 90 * time.Second
	}
	gated := func(pod *corev1.Pod) bool {
		return v1beta1.HasSchedulingGate(&pod.Spec) || pod.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission
	}
	if err := e.r.dryRunUntil(ctx, e.crc, wait, "the webhook gated a dry-run pod", gated); err != nil {
		return fmt.Errorf("%w%s", err, e.kubeletErr())
	}
	return nil
}

// clusterConfig is the ClusterPodPlacementConfig the scenario asks for.
func (e *operatorEnv) clusterConfig() *v1beta1.ClusterPodPlacementConfig {
	return e.clusterConfigFrom(e.r.s.Operator.ClusterConfig)
}

// clusterConfigFrom is the ClusterPodPlacementConfig of the spec users write, with the
// references the simulator sets.
func (e *operatorEnv) clusterConfigFrom(userSpec v1beta1.ClusterPodPlacementConfigSpec) *v1beta1.ClusterPodPlacementConfig {
	spec := *userSpec.DeepCopy()
	if e.r.s.Operator.GlobalPullSecret {
		spec.GlobalPullSecretRef = &v1beta1.NamespacedObjectReference{Namespace: e.r.s.Operator.Namespace, Name: globalPullSecretName}
	}
	spec.RegistryCertsConfigmapRef = e.certsRef
	return &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}, Spec: spec}
}

func (e *operatorEnv) createClusterConfig(ctx context.Context) error {
	if err := e.crc.Create(ctx, e.clusterConfig()); err != nil {
		return fmt.Errorf("creating the ClusterPodPlacementConfig: %w", err)
	}
	return nil
}

func (e *operatorEnv) deleteClusterConfig(ctx context.Context) error {
	return crclient.IgnoreNotFound(e.crc.Delete(ctx, e.clusterConfig()))
}

// prepareNamespace creates a workload namespace's pull secret and
// PodPlacementConfigs.
func (e *operatorEnv) prepareNamespace(ctx context.Context, ns string, i int) error {
	if e.authMode != "" {
		if err := e.createPullSecret(ctx, ns, workload.PullSecretName); err != nil {
			return err
		}
	}
	ppcs := podPlacementConfigs(e.r.s, ns, i)
	if err := createPodPlacementConfigs(ctx, e.crc, ppcs); err != nil {
		return err
	}
	if len(ppcs) > 0 && e.r.s.Operator.ClusterConfig.LocalPlacementEnabled() {
		return e.startLocal(ctx, ns)
	}
	return nil
}

// podPlacementConfigs are the PodPlacementConfigs of workload namespace ns, the i-th.
func podPlacementConfigs(s *scenario.Scenario, ns string, i int) []*v1beta1.PodPlacementConfig {
	var out []*v1beta1.PodPlacementConfig
	for _, p := range s.Operator.PodPlacementConfigs {
		if p.Namespaces != 0 && i >= p.Namespaces {
			continue
		}
		out = append(out, &v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}, Spec: *p.Spec.DeepCopy()})
	}
	return out
}

func createPodPlacementConfigs(ctx context.Context, c crclient.Client, ppcs []*v1beta1.PodPlacementConfig) error {
	for _, ppc := range ppcs {
		if err := c.Create(ctx, ppc); err != nil {
			return fmt.Errorf("creating PodPlacementConfig %s/%s: %w", ppc.Namespace, ppc.Name, err)
		}
	}
	return nil
}

// startLocal starts ns's local controller and webhook and registers the webhook, as the operator
// does for the first PodPlacementConfig of a namespace; the run's cleanup stops them.
func (e *operatorEnv) startLocal(ctx context.Context, ns string) error {
	l, err := operand.NewLocal(e.cfg, ns)
	if err != nil {
		return fmt.Errorf("local components of %s: %w", ns, err)
	}
	for _, c := range []operand.Operand{l.Controller, l.Webhook} {
		if err := c.Start(e.ctx); err != nil {
			return fmt.Errorf("local components of %s: %w", ns, err)
		}
		e.r.defer_(c.Stop)
	}
	mwc := l.WebhookConfiguration(e.caPEM)
	if err := e.crc.Create(ctx, mwc); err != nil {
		return fmt.Errorf("registering the local webhook of %s: %w", ns, err)
	}
	e.r.defer_(func() { _ = e.crc.Delete(context.Background(), mwc) })
	return nil
}

// createPullSecret creates a kubernetes.io/dockerconfigjson secret for the
// registry's user.
func (e *operatorEnv) createPullSecret(ctx context.Context, ns, name string) error {
	return createPullSecret(ctx, e.crc, pullSecret(ns, name, e.reg.Host(), registryUser, e.password))
}

// pullSecret is a kubernetes.io/dockerconfigjson secret holding user's password for host.
func pullSecret(ns, name, host, user, password string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	// Marshalling maps of strings cannot fail.
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{
		host: map[string]string{"username": user, "password": password, "auth": auth},
	}})
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}
}

func createPullSecret(ctx context.Context, c crclient.Client, secret *corev1.Secret) error {
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pull secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// resetCounters starts counting registry requests and operator counters
// for a pass.
func (e *operatorEnv) resetCounters() {
	e.reg.Counters().Reset()
	e.mu.Lock()
	e.countBase = e.counters.Snapshot()
	if e.kubelet != nil {
		e.exitBase, e.oomBase = e.kubelet.Restarts()
	}
	e.mu.Unlock()
}

// startControllers starts the controller instances, the first before the
// others so that it takes the lease.
func (e *operatorEnv) startControllers(ctx context.Context) error {
	controllers := []operand.Component{e.op.Controller}
	for _, p := range e.op.Controllers[min(1, len(e.op.Controllers)):] {
		controllers = append(controllers, p)
	}
	for _, c := range controllers {
		if err := c.Start(ctx); err != nil {
			return err
		}
		e.r.defer_(c.Stop)
	}
	return nil
}

// err reports a component that stopped on its own.
func (e *operatorEnv) err() error {
	if e.op == nil {
		return e.operator.Err()
	}
	errs := []error{e.op.Controller.Err(), e.op.Webhook.Err()}
	for _, p := range e.op.Controllers {
		errs = append(errs, p.Err())
	}
	return errors.Join(errs...)
}

// stats reads the registry's and the operator's counters for the pass. A
// metric the operator no longer exports under the name pkg/components gives is
// an error, not a 0.
func (e *operatorEnv) stats(pods []workload.Pod) (*report.OperatorStats, *report.RegistryStats, error) {
	e.mu.Lock()
	base := e.countBase
	e.mu.Unlock()
	o, err := operatorStats(e.counters.Snapshot().Sub(base))
	if o != nil && e.kubelet != nil {
		exits, ooms := e.kubelet.Restarts()
		e.mu.Lock()
		o.Restarts, o.OOMKills = since(exits, e.exitBase), since(ooms, e.oomBase)
		e.mu.Unlock()
	}
	g := registryStats(e.reg.Counters().Snapshot(), pods, e.r.opts.Scenario.Catalog, e.authMode)
	return o, g, err
}

// operatorStats reads the operator's counters, structurally, by the names
// the operator defines them with; every metric must be there.
func operatorStats(now operand.Snapshot) (*report.OperatorStats, error) {
	var errs []error
	read := func(v float64, err error) float64 {
		errs = append(errs, err)
		return v
	}
	byLabel := func(v map[string]float64, err error) map[string]float64 {
		errs = append(errs, err)
		return v
	}
	o := &report.OperatorStats{
		CacheHits:        read(now.Sum(components.MetricInspectCacheHits)),
		CacheMisses:      read(now.Sum(components.MetricInspectCacheMisses)),
		CacheDedupWaits:  read(now.Sum(components.MetricInspectCacheDedupWaits)),
		Inspections:      read(now.Count(components.MetricInspectDuration)),
		InspectionErrors: byLabel(now.ByLabel(components.MetricInspectErrors, components.LabelInspectReason)),
		WebhookGated:     read(now.Sum(components.MetricWebhookPodsGated)),
		WebhookSkipped:   byLabel(now.ByLabel(components.MetricWebhookPodsSkipped, components.LabelWebhookReason)),
		Counters:         now.Flat(),
	}
	if n := o.CacheHits + o.CacheMisses; n > 0 {
		o.CacheHitRate = o.CacheHits / n
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("reading the operator's metrics: %w", err)
	}
	return o, nil
}

// since is now − base by key, keeping the keys that grew.
func since(now, base map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range now {
		if d := v - base[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// attacks reports whether the scenario's attacker has pods of the kind.
func attacks(s *scenario.Scenario, kind scenario.AttackImages) bool {
	return s.Attacker != nil && slices.ContainsFunc(s.Attacker.Attacks, func(a scenario.AttackSpec) bool { return a.Images == kind })
}

// baseFaults are the registry faults of the whole run: the scenario's, and
// the attacker's tarpit.
func baseFaults(s *scenario.Scenario) (fakeregistry.Faults, error) {
	r := s.Registry
	var f fakeregistry.Faults
	if attacks(s, scenario.AttackImagesTarpit) {
		t := s.Attacker.Tarpit
		f.Tarpit = &fakeregistry.Tarpit{Repositories: []string{workload.TarpitRepository},
			Size: int(t.Size.Value()), BytesPerSecond: int(t.BytesPerSecond.Value())}
	}
	if len(r.Latency) > 0 {
		f.Latency = map[fakeregistry.RequestKind]fakeregistry.Latency{}
		for k, l := range r.Latency {
			f.Latency[fakeregistry.RequestKind(k)] = latency(l)
		}
	}
	if e := r.Errors; e != nil {
		applyRates(&f, *e)
	}
	return f, f.Validate()
}

func applyRates(f *fakeregistry.Faults, e scenario.ErrorRatesSpec) {
	f.ServerErrorRate, f.TooManyRequestsRate, f.HangRate = e.ServerErrorRate, e.TooManyRequestsRate, e.HangRate
	f.RetryAfter = e.RetryAfter.D()
	f.Kinds = nil
	for _, k := range e.Kinds {
		f.Kinds = append(f.Kinds, fakeregistry.RequestKind(k))
	}
}

// latency converts a validated latency spec.
func latency(l scenario.LatencySpec) fakeregistry.Latency {
	switch {
	case l.Fixed != nil:
		return fakeregistry.FixedLatency(l.Fixed.D())
	case l.Min != nil:
		return fakeregistry.UniformLatency(l.Min.D(), l.Max.D())
	default:
		return fakeregistry.LogNormalLatency(l.P50.D(), l.P99.D())
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// kubeletErr is the kubelet's last error, for a message; "" in direct mode or when none.
func (e *operatorEnv) kubeletErr() string {
	if e.kubelet == nil || e.kubelet.Err() == nil {
		return ""
	}
	return "; kubelet: " + e.kubelet.Err().Error()
}
