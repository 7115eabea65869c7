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
	"github.com/archgate/archgate/operator/pkg/roles"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/recorder"
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
	op         *operand.Operator
	crc        crclient.Client
	baseFaults fakeregistry.Faults
	password   string
	authMode   fakeregistry.AuthMode
	mu         sync.Mutex
	countBase  map[string]float64
}

// registryHost is the host pods' image references point at; without the
// operator no registry runs and the references only need to be well-formed.
func (r *run) registryHost() string {
	if r.op != nil {
		return r.op.reg.Host()
	}
	return "registry.sim.invalid:5000"
}

// startOperator starts the fake registry, creates the operator's namespace,
// secrets and ClusterPodPlacementConfig, starts the controller and the
// webhook and registers the webhook with the apiserver.
func (r *run) startOperator(ctx context.Context) error {
	s := r.s
	e := &operatorEnv{r: r, ctx: ctx}
	faults, err := baseFaults(s.Registry)
	if err != nil {
		return err
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

	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1beta1.AddToScheme(scheme)); err != nil {
		return err
	}
	if e.crc, err = crclient.New(r.cfg, crclient.Options{Scheme: scheme}); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Operator.Namespace}}
	if err := e.crc.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the operator namespace: %w", err)
	}
	var global *types.NamespacedName
	if s.Operator.GlobalPullSecret {
		global = &types.NamespacedName{Namespace: s.Operator.Namespace, Name: globalPullSecretName}
		if err := e.createPullSecret(ctx, global.Namespace, global.Name); err != nil {
			return err
		}
	}
	if err := e.createClusterConfig(ctx); err != nil {
		return err
	}

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
	}
	// Resolved as the operator resolves it for a deployed controller.
	cfg.ImageInspection = s.Operator.ClusterConfig.ImageInspection.Settings()
	if *s.Registry.TLS {
		cfg.CertsDir = filepath.Join(r.tmp, "certs.d")
		if _, err := e.reg.WriteCertsDir(cfg.CertsDir); err != nil {
			return err
		}
	}
	cfg.WebhookCertDir = filepath.Join(r.tmp, "webhook")
	if err := os.MkdirAll(cfg.WebhookCertDir, 0o700); err != nil {
		return err
	}
	caPEM, err := roles.WriteSelfSignedServingCert(cfg.WebhookCertDir, 24*time.Hour, cfg.WebhookHost)
	if err != nil {
		return err
	}
	ports, err := operand.FreePorts(cfg.WebhookHost, 1)
	if err != nil {
		return err
	}
	cfg.WebhookPort = ports[0]
	if r.opts.Archgate != "" {
		cfg.Binary = r.opts.Archgate
		if cfg.Kubeconfig, err = r.kubeconfig(); err != nil {
			return err
		}
		if cfg.LogDir, err = r.logDir(); err != nil {
			return err
		}
		cfg.OnStart = func(name string, pid int) { r.sampler.Watch(pid, name) }
	}
	e.op, err = operand.New(cfg)
	if err != nil {
		return fmt.Errorf("operator.enabled: %w", err)
	}
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
	r.op = e
	return e.waitWebhookEffective(ctx)
}

// waitWebhookEffective dry-runs pod creations until the apiserver calls the
// webhook and the pod comes back gated.
func (e *operatorEnv) waitWebhookEffective(ctx context.Context) error {
	name := fmt.Sprintf("sim-%s-probe", e.r.id)
	if err := e.crc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	probe := e.r.plan.Pods[0]
	probe.ArchAffinity, probe.NodeSelectorArch, probe.PullSecret = "", "", false
	deadline := time.Now().Add(30 * time.Second)
	for {
		pod := probe.Object(workload.ObjectOptions{Host: e.reg.Host(), Namespaces: []string{name},
			CPU: *e.r.s.Workload.Requests.CPU, Memory: *e.r.s.Workload.Requests.Memory})
		pod.Namespace = name
		pod.Spec.InitContainers = nil
		err := e.crc.Create(ctx, pod, crclient.DryRunAll)
		if err == nil && recorder.HasGate(pod) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook did not gate a dry-run pod within 30s (last error: %v)", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// clusterConfig is the ClusterPodPlacementConfig the scenario asks for.
func (e *operatorEnv) clusterConfig() *v1beta1.ClusterPodPlacementConfig {
	spec := *e.r.s.Operator.ClusterConfig.DeepCopy()
	if e.r.s.Operator.GlobalPullSecret {
		spec.GlobalPullSecretRef = &v1beta1.NamespacedObjectReference{Namespace: e.r.s.Operator.Namespace, Name: globalPullSecretName}
	}
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
	for _, p := range e.r.s.Operator.PodPlacementConfigs {
		if p.Namespaces != 0 && i >= p.Namespaces {
			continue
		}
		ppc := &v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}, Spec: *p.Spec.DeepCopy()}
		if err := e.crc.Create(ctx, ppc); err != nil {
			return fmt.Errorf("creating PodPlacementConfig %s/%s: %w", ns, p.Name, err)
		}
	}
	return nil
}

// createPullSecret creates a kubernetes.io/dockerconfigjson secret for the
// registry's user.
func (e *operatorEnv) createPullSecret(ctx context.Context, ns, name string) error {
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + e.password))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{
		e.reg.Host(): map[string]string{"username": registryUser, "password": e.password, "auth": auth},
	}})
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}
	if err := e.crc.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pull secret %s/%s: %w", ns, name, err)
	}
	return nil
}

// resetCounters starts counting registry requests and operator counters
// for a pass.
func (e *operatorEnv) resetCounters() {
	e.reg.Counters().Reset()
	e.mu.Lock()
	e.countBase = e.op.Counters.Snapshot()
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
	errs := []error{e.op.Controller.Err(), e.op.Webhook.Err()}
	for _, p := range e.op.Controllers {
		errs = append(errs, p.Err())
	}
	return errors.Join(errs...)
}

// stats reads the registry's and the operator's counters for the pass.
func (e *operatorEnv) stats(pods []workload.Pod) (*report.OperatorStats, *report.RegistryStats) {
	e.mu.Lock()
	base := e.countBase
	e.mu.Unlock()
	now := e.op.Counters.Snapshot()
	for k, v := range base {
		now[k] -= v
	}
	o := &report.OperatorStats{
		CacheHits:        operand.Sum(now, "archgate_inspect_cache_hits_total"),
		CacheMisses:      operand.Sum(now, "archgate_inspect_cache_misses_total"),
		CacheDedupWaits:  operand.Sum(now, "archgate_inspect_cache_dedup_waits_total"),
		Inspections:      operand.Sum(now, "archgate_inspect_duration_seconds_count"),
		InspectionErrors: operand.ByLabel(now, "archgate_inspect_errors_total", "reason"),
		WebhookGated:     operand.Sum(now, "archgate_webhook_pods_gated_total"),
		WebhookSkipped:   operand.ByLabel(now, "archgate_webhook_pods_skipped_total", "reason"),
		Counters:         now,
	}
	if n := o.CacheHits + o.CacheMisses; n > 0 {
		o.CacheHitRate = o.CacheHits / n
	}
	snap := e.reg.Counters().Snapshot()
	g := &report.RegistryStats{Requests: map[string]uint64{}, Statuses: map[string]uint64{}, Faults: map[string]uint64{},
		Total: snap.Total()}
	for k, v := range snap.Requests {
		g.Requests[string(k)] = v
	}
	for k, v := range snap.Statuses {
		g.Statuses[strconv.Itoa(k)] = v
	}
	for k, v := range snap.Faults {
		g.Faults[string(k)] = v
	}
	// The physical minimum counts each image the operator must inspect
	// once: distinct images (a tag and a digest reference of one image are
	// one) of the pods the webhook gates (nodeSelector-pinned pods are
	// skipped). It is a lower bound: an image first met by digest and later
	// by tag needs both looked up, and each credential identity is cached
	// apart.
	seen := map[string]bool{}
	for _, p := range pods {
		if p.NodeSelectorArch != "" {
			continue
		}
		for _, ref := range p.Images() {
			im, err := e.r.opts.Scenario.Catalog.Image(ref)
			if err != nil || seen[im.Repository+"@"+im.Digest] {
				continue
			}
			seen[im.Repository+"@"+im.Digest] = true
			g.UniqueImages++
			g.MinimumRequests += MinRequests(im.Format, e.authMode)
		}
	}
	if g.MinimumRequests > 0 {
		g.PerMinimum = float64(g.Total) / float64(g.MinimumRequests)
	}
	return o, g
}

// MinRequests is the least number of registry requests containers/image
// (the operator's client) needs to inspect one image once: a /v2/ ping and
// the manifest GET, plus the config blob for a single-platform manifest (its
// architecture is in the config), plus a token request with bearer auth
// (DESIGN §5: list = 2, single-arch = 3, bearer +1).
func MinRequests(f fakeregistry.Format, auth fakeregistry.AuthMode) int {
	n := 2
	if !f.IsList() {
		n++
	}
	if auth == fakeregistry.AuthBearer {
		n++
	}
	return n
}

// baseFaults are the registry faults of the whole run.
func baseFaults(r scenario.RegistrySpec) (fakeregistry.Faults, error) {
	var f fakeregistry.Faults
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
