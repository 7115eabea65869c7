package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/simulator/internal/existing"
	"github.com/archgate/archgate/simulator/internal/fakenodes"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// ExistingOptions configure a run against an existing cluster (Options.Kubeconfig).
type ExistingOptions struct {
	// Image is archgate's image, one the cluster's nodes can pull; make deploy installs it
	// when the cluster has no archgate operator yet.
	Image string
	// Registry is the host:port of the registry the cluster's pods reach that serves the
	// scenario's catalog; RegistryCA its CA (PEM), given to archgate through the
	// ClusterPodPlacementConfig's registryCertsConfigmapRef.
	Registry   string
	RegistryCA []byte
	// RegistryUser and RegistryPassword are a user of Registry, for the pull secrets of
	// scenarios with registry.auth.
	RegistryUser, RegistryPassword string
	// RegistryMetrics is where Registry serves its request counters (fakeregistry serve
	// --metrics-addr: HOST:PORT or unix:PATH); empty: the report has no registry counters.
	RegistryMetrics string
}

// existingEnv is the state of a run against an existing cluster.
type existingEnv struct {
	opts ExistingOptions
	crc  crclient.Client
	// installed is true when the run installed archgate (and so removes it).
	installed bool
	// nodes are the cluster's nodes once the run's were Ready, for the report's cluster block.
	nodes []corev1.Node
}

// Names of what the run creates in the operator's namespace of an existing cluster.
const (
	existingCertsConfigMap = "sim-registry-certs"
	operatorDeployment     = "archgate-operator"
	operatorWait           = 3 * time.Minute
)

// executeExisting runs the scenario against the cluster of Options.Kubeconfig: kwok nodes
// labelled with the run, the cluster's scheduler, archgate installed from deploy/ and
// configured through the ClusterPodPlacementConfig, the cluster's registry. Everything the run
// creates carries its label and is removed by the run's cleanup, on every exit path.
func (r *run) executeExisting(ctx context.Context) (results, error) {
	var res results
	setKlog(r.opts.Logger)
	if err := existing.Unsupported(r.opts.Scenario.File, r.s, existing.Offer{RegistryCredentials: r.ext.opts.RegistryUser != ""}); err != nil {
		return res, err
	}
	if err := r.checkExistingOptions(); err != nil {
		return res, err
	}
	r.sampler = procs.StartSampler(ctx, time.Second)
	r.defer_(r.sampler.Stop)
	if err := r.connectExisting(); err != nil {
		return res, err
	}
	if err := r.refuseForeignConfig(ctx); err != nil {
		return res, err
	}
	r.defer_(r.cleanExisting)
	r.logf("run %s: everything it creates carries %s=%s (after a killed run: simulator cleanup --kubeconfig %s --run %s)",
		r.id, existing.RunLabel, r.id, r.opts.Kubeconfig, r.id)
	if err := r.createKwokNodes(ctx); err != nil {
		return res, err
	}
	if err := r.runOperatorOffPasses(ctx, &res); err != nil {
		return res, err
	}
	if r.s.Operator.Enabled {
		t := time.Now()
		if err := r.startExistingOperator(ctx); err != nil {
			return res, err
		}
		r.logf("archgate installed and rolled out in %.1fs", time.Since(t).Seconds())
	}
	if err := r.settle(ctx); err != nil {
		return res, err
	}
	before, err := r.scrapeRegistry(ctx)
	if err != nil {
		return res, err
	}
	p, err := r.runPass(ctx, passSpec{name: "main", operator: r.s.Operator.Enabled})
	res.main = &p
	if err != nil {
		return res, fmt.Errorf("main pass: %w", err)
	}
	r.logf("main pass: %d/%d pods bound in %.1fs (%.1f pods/s)", p.pass.BoundPods, p.pass.Pods, p.pass.DurationSeconds, p.pass.Throughput)
	if after, err := r.scrapeRegistry(ctx); err != nil {
		res.errors = append(res.errors, err.Error())
	} else if before != nil {
		// The cluster's registry has its own auth rules (not the scenario's mode): the minimum
		// counts no bearer tokens, and any it asked for show as protocol overhead.
		res.registry = registryStats(after.Sub(*before), r.plan.Pods, r.opts.Scenario.Catalog, fakeregistry.AuthNone)
	}
	return res, nil
}

// scrapeRegistry reads the counters of the cluster's registry from --registry-metrics; nil
// without it.
func (r *run) scrapeRegistry(ctx context.Context) (*fakeregistry.Snapshot, error) {
	addr := r.ext.opts.RegistryMetrics
	if addr == "" {
		return nil, nil
	}
	client, url := &http.Client{Timeout: 10 * time.Second}, "http://"+addr+"/metrics"
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		url = "http://registry/metrics"
		client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("--registry-metrics %s: %w", addr, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("--registry-metrics %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("--registry-metrics %s: GET /metrics: %s", addr, resp.Status)
	}
	snap, err := fakeregistry.ParseSnapshot(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("--registry-metrics %s: %w", addr, err)
	}
	return &snap, nil
}

// checkExistingOptions refuses a run that lacks what the scenario needs from the cluster.
func (r *run) checkExistingOptions() error {
	o := r.ext.opts
	var errs []error
	if r.s.Operator.Enabled {
		if o.Registry == "" {
			errs = append(errs, errors.New("operator.enabled: a run against a cluster needs --registry HOST:PORT, a registry its pods reach serving the scenario's catalog"))
		}
		if len(o.RegistryCA) == 0 {
			errs = append(errs, errors.New("operator.enabled: a run against a cluster needs --registry-ca FILE, the registry's CA"))
		}
	}
	return errors.Join(errs...)
}

// connectExisting loads the kubeconfig and makes the clients.
func (r *run) connectExisting() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", r.opts.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", r.opts.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = testenv.DefaultQPS, testenv.DefaultBurst
	r.env.ControlPlane = cfg.Host
	if err := r.connect(cfg); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1beta1.AddToScheme(scheme)); err != nil {
		return err
	}
	r.ext.crc, err = crclient.New(cfg, crclient.Options{Scheme: scheme})
	return err
}

// cleanExisting removes everything the run created; it runs from the run's cleanup, also after
// an error or an interrupt (the run's context is done then: it has its own).
func (r *run) cleanExisting() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	r.logf("cleaning up run %s", r.id)
	c := existing.Cleaner{Client: r.client, CRC: r.ext.crc, RepoRoot: r.opts.RepoRoot, Kubeconfig: r.opts.Kubeconfig,
		RunID: r.id, Logf: r.logf}
	if err := c.Clean(ctx); err != nil {
		r.logf("%v", err)
	}
}

// createKwokNodes creates the scenario's node pools as kwok nodes of the run and waits until
// the cluster's kwok made them Ready; the report's cluster block is taken then.
func (r *run) createKwokNodes(ctx context.Context) error {
	t := time.Now()
	var nodes []*corev1.Node
	r.nodePlatform = map[string]string{}
	for _, p := range r.s.Nodes {
		pool := r.nodePool(p)
		for i := range p.Count {
			n := existing.KwokNode(pool, i, r.id)
			nodes = append(nodes, n)
			r.nodePlatform[n.Name] = p.OS + "/" + p.Arch
		}
	}
	if err := fakenodes.CreateNodeObjects(ctx, r.client, nodes, 20); err != nil {
		return err
	}
	if err := existing.WaitReady(ctx, r.client, r.id, len(nodes)); err != nil {
		return err
	}
	r.logf("%d kwok nodes created and Ready in %.1fs", len(nodes), time.Since(t).Seconds())
	all, err := r.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the cluster's nodes: %w", err)
	}
	r.ext.nodes = all.Items
	return nil
}

// clusterBlock is the report's cluster block; nil for envtest.
func (r *run) clusterBlock() *report.Cluster {
	if r.ext == nil || r.cfg == nil {
		return nil
	}
	return existing.Describe(existing.Description{Server: r.cfg.Host, ServerVersion: r.env.KubernetesVersion,
		RunID: r.id, Nodes: r.ext.nodes, Operator: r.s.Operator.Enabled, Installed: r.ext.installed,
		Image: r.ext.opts.Image, Registry: r.ext.opts.Registry, RegistryAuth: registryAuthMode(r.s),
		RegistryCounted: r.ext.opts.RegistryMetrics != ""})
}

// refuseForeignConfig fails when the cluster has a ClusterPodPlacementConfig the run did not
// create: an archgate configured by someone else would gate the run's pods (passes without the
// operator) or be reconfigured by the run.
func (r *run) refuseForeignConfig(ctx context.Context) error {
	cppc := &v1beta1.ClusterPodPlacementConfig{}
	err := r.ext.crc.Get(ctx, crclient.ObjectKey{Name: v1beta1.SingletonName}, cppc)
	switch {
	case err == nil:
		return fmt.Errorf("ClusterPodPlacementConfig %s exists in the cluster already: the run configures archgate itself; run against a cluster without one", cppc.Name)
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	default:
		return fmt.Errorf("reading ClusterPodPlacementConfig %s: %w", v1beta1.SingletonName, err)
	}
}

// startExistingOperator installs archgate from deploy/ (make deploy with Image) unless the
// cluster has its operator already, waits for the operator, creates the ClusterPodPlacementConfig
// of the scenario (with the registry's CA and the global pull secret, labelled with the run)
// and waits until the components rolled out and the webhook gates pods.
func (r *run) startExistingOperator(ctx context.Context) error {
	o := r.ext.opts
	_, err := r.client.AppsV1().Deployments(existing.DeployNamespace).Get(ctx, operatorDeployment, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if o.Image == "" {
			return fmt.Errorf("operator.enabled: the cluster has no archgate operator (Deployment %s/%s) and no --image was given to install one", existing.DeployNamespace, operatorDeployment)
		}
		r.logf("installing archgate from deploy/ (make deploy IMG=%s)", o.Image)
		// The run removes what it installed, also when the install fails half-way.
		r.ext.installed = true
		if err := existing.Deploy(ctx, r.opts.RepoRoot, r.opts.Kubeconfig, "apply", o.Image); err != nil {
			return err
		}
		if err := existing.MarkInstalled(ctx, r.client, r.id); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("reading Deployment %s/%s: %w", existing.DeployNamespace, operatorDeployment, err)
	}
	if err := r.waitDeploymentAvailable(ctx, existing.DeployNamespace, operatorDeployment); err != nil {
		return err
	}
	e := &operatorEnv{r: r, ctx: ctx, crc: r.ext.crc}
	if err := r.configureExistingOperator(ctx, e); err != nil {
		return err
	}
	if err := e.waitRolledOut(ctx); err != nil {
		return err
	}
	return e.waitWebhookEffective(ctx)
}

// configureExistingOperator creates, as the cluster's admin would, the registry's CA
// ConfigMap, the global pull secret and the ClusterPodPlacementConfig, all labelled with the run.
func (r *run) configureExistingOperator(ctx context.Context, e *operatorEnv) error {
	o, ns := r.ext.opts, existing.DeployNamespace
	labels := map[string]string{workload.LabelRun: r.id}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: existingCertsConfigMap, Labels: labels},
		Data:       map[string]string{strings.Replace(o.Registry, ":", "..", 1): string(o.RegistryCA)},
	}
	if err := e.crc.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, cm.Name, err)
	}
	e.certsRef = &v1beta1.NamespacedObjectReference{Namespace: ns, Name: existingCertsConfigMap}
	if r.s.Operator.GlobalPullSecret {
		secret := pullSecret(ns, globalPullSecretName, o.Registry, o.RegistryUser, o.RegistryPassword)
		secret.Labels = labels
		if err := createPullSecret(ctx, e.crc, secret); err != nil {
			return err
		}
	}
	cppc := e.clusterConfig()
	cppc.Labels = labels
	if err := e.crc.Create(ctx, cppc); err != nil {
		return fmt.Errorf("creating the ClusterPodPlacementConfig: %w", err)
	}
	return nil
}

// prepareExistingNamespace creates a workload namespace's pull secret (scenarios with
// registry.auth) and PodPlacementConfigs; archgate's operator starts local components itself.
func (r *run) prepareExistingNamespace(ctx context.Context, ns string, i int) error {
	o := r.ext.opts
	if r.s.Registry.Auth != nil {
		if err := createPullSecret(ctx, r.ext.crc, pullSecret(ns, workload.PullSecretName, o.Registry, o.RegistryUser, o.RegistryPassword)); err != nil {
			return err
		}
	}
	return createPodPlacementConfigs(ctx, r.ext.crc, podPlacementConfigs(r.s, ns, i))
}

// waitDeploymentAvailable polls a Deployment until its Available condition is True.
func (r *run) waitDeploymentAvailable(ctx context.Context, ns, name string) error {
	deadline := time.Now().Add(operatorWait)
	for {
		d, err := r.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		why := ""
		switch {
		case err != nil:
			why = err.Error()
		case !deploymentAvailable(d.Status.Conditions):
			why = fmt.Sprintf("%d of %d replicas available", d.Status.AvailableReplicas, d.Status.Replicas)
		default:
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Deployment %s/%s not Available within %s: %s", ns, name, operatorWait, why)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

func deploymentAvailable(conds []appsv1.DeploymentCondition) bool {
	for _, c := range conds {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// confine keeps the pods of a run against an existing cluster on the run's kwok nodes
// (existing.Confine); nil for envtest, whose nodes are all the run's.
func (r *run) confine() func(*corev1.Pod) {
	if r.ext == nil {
		return nil
	}
	return func(p *corev1.Pod) { existing.Confine(p, r.id) }
}

func registryAuthMode(s *scenario.Scenario) string {
	if s.Registry.Auth == nil {
		return ""
	}
	return s.Registry.Auth.Mode
}
