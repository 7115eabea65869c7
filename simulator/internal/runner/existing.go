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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/simulator/internal/existing"
	"github.com/archgate/archgate/simulator/internal/fakenodes"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
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

// existingCluster is the cluster of Options.Kubeconfig: kwok nodes labelled with the run, the
// cluster's scheduler and registry, archgate installed from deploy/ (installedComponents) and
// configured through the ClusterPodPlacementConfig. Everything the run creates carries its
// label and stop removes it, on every exit path.
type existingCluster struct {
	opts    Options
	s       *scenario.Scenario
	id      string
	sampler *procs.Sampler
	logf    func(string, ...any)
	kube    *kube
	// installed is true when the run installed archgate (and so removes it).
	installed bool
	// nodes are the cluster's nodes once the run's were Ready, for the report's cluster block.
	nodes    []corev1.Node
	cleanups cleanups
}

var _ cluster = (*existingCluster)(nil)

// Names of what the run creates in the operator's namespace of an existing cluster.
const (
	operatorDeployment = "archgate-operator"
	operatorWait       = 3 * time.Minute
)

// start checks that the cluster offers what the scenario needs, connects, and creates the
// scenario's node pools as kwok nodes of the run. The clients are returned once connected,
// also with an error.
func (c *existingCluster) start(ctx context.Context) (*kube, map[string]string, error) {
	o := c.opts.Existing
	if err := existing.Unsupported(c.opts.Scenario.File, c.s, existing.Offer{RegistryCredentials: o.RegistryUser != ""}); err != nil {
		return nil, nil, err
	}
	if err := checkExistingOptions(c.s, o); err != nil {
		return nil, nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.opts.Kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("loading kubeconfig %s: %w", c.opts.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = testenv.DefaultQPS, testenv.DefaultBurst
	if c.kube, err = connect(cfg, cfg.Host); err != nil {
		return nil, nil, err
	}
	c.sampler.Sample()
	if err := c.refuseForeignConfig(ctx); err != nil {
		return c.kube, nil, err
	}
	c.cleanups.add(c.clean)
	c.logf("run %s: everything it creates carries %s=%s (after a killed run: simulator cleanup --kubeconfig %s --run %s)",
		c.id, existing.RunLabel, c.id, c.opts.Kubeconfig, c.id)
	nodes, err := c.createKwokNodes(ctx)
	return c.kube, nodes, err
}

func (c *existingCluster) stop() { c.cleanups.run() }

// settle waits a fixed settleQuiet·5: the cluster's processes are not visible to measure.
func (c *existingCluster) settle(ctx context.Context) error { return sleep(ctx, 5*settleQuiet) }

func (c *existingCluster) registry() registryAccess {
	o := c.opts.Existing
	return registryAccess{host: o.Registry, hang: "hang.sim.invalid:5000", ca: o.RegistryCA, user: o.RegistryUser, password: o.RegistryPassword}
}

// countRegistry scrapes the cluster's registry's counters (--registry-metrics) now; the count
// scrapes them again.
func (c *existingCluster) countRegistry(ctx context.Context) (registryCount, error) {
	before, err := c.scrapeRegistry(ctx)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, pods []workload.Pod) (*report.RegistryStats, error) {
		after, err := c.scrapeRegistry(ctx)
		if err != nil || before == nil {
			return nil, err
		}
		// The cluster's registry has its own auth rules (not the scenario's mode): the minimum
		// counts no bearer tokens, and any it asked for show as protocol overhead.
		return registryStats(after.Sub(*before), pods, c.opts.Scenario.Catalog, fakeregistry.AuthNone), nil
	}, nil
}

// step: the timeline is refused against a cluster (existing.Unsupported).
func (c *existingCluster) step(scenario.Event) (step, bool) { return step{}, false }

// confine keeps the run's pods on the run's kwok nodes (existing.Confine).
func (c *existingCluster) confine() func(*corev1.Pod) {
	return func(p *corev1.Pod) { existing.Confine(p, c.id) }
}

func (c *existingCluster) reachesHarness() bool { return false }

// fakeKubelet is false: the nodes are kwok's, which reports the pods itself.
func (c *existingCluster) fakeKubelet() bool { return false }

func (c *existingCluster) schedulerSLI(context.Context) []stats.Bucket { return nil }

func (c *existingCluster) processes() []*operand.Process { return nil }

// scrapeRegistry reads the counters of the cluster's registry from --registry-metrics; nil
// without it.
func (c *existingCluster) scrapeRegistry(ctx context.Context) (*fakeregistry.Snapshot, error) {
	addr := c.opts.Existing.RegistryMetrics
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
func checkExistingOptions(s *scenario.Scenario, o ExistingOptions) error {
	var errs []error
	if s.Operator.Enabled {
		if o.Registry == "" {
			errs = append(errs, errors.New("operator.enabled: a run against a cluster needs --registry HOST:PORT, a registry its pods reach serving the scenario's catalog"))
		}
		if len(o.RegistryCA) == 0 {
			errs = append(errs, errors.New("operator.enabled: a run against a cluster needs --registry-ca FILE, the registry's CA"))
		}
	}
	return errors.Join(errs...)
}

// clean removes everything the run created; it runs from stop, also after an error or an
// interrupt (the run's context is done then: it has its own).
func (c *existingCluster) clean() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c.logf("cleaning up run %s", c.id)
	cl := existing.Cleaner{Client: c.kube.client, CRC: c.kube.crc, RepoRoot: c.opts.RepoRoot, Kubeconfig: c.opts.Kubeconfig,
		RunID: c.id, Logf: c.logf}
	if err := cl.Clean(ctx); err != nil {
		c.logf("%v", err)
	}
}

// createKwokNodes creates the scenario's node pools as kwok nodes of the run and waits until
// the cluster's kwok made them Ready; the report's cluster block is taken then.
func (c *existingCluster) createKwokNodes(ctx context.Context) (map[string]string, error) {
	t := time.Now()
	var nodes []*corev1.Node
	platforms := map[string]string{}
	for _, p := range c.s.Nodes {
		pool := nodePool(c.id, p)
		for i := range p.Count {
			n := existing.KwokNode(pool, i, c.id)
			nodes = append(nodes, n)
			platforms[n.Name] = p.OS + "/" + p.Arch
		}
	}
	if err := fakenodes.CreateNodeObjects(ctx, c.kube.client, nodes, 20); err != nil {
		return nil, err
	}
	if err := existing.WaitReady(ctx, c.kube.client, c.id, len(nodes)); err != nil {
		return nil, err
	}
	c.logf("%d kwok nodes created and Ready in %.1fs", len(nodes), time.Since(t).Seconds())
	all, err := c.kube.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's nodes: %w", err)
	}
	c.nodes = all.Items
	return platforms, nil
}

// block is the report's cluster block; nil when the run did not connect.
func (c *existingCluster) block(kubernetesVersion string) *report.Cluster {
	if c.kube == nil {
		return nil
	}
	o := c.opts.Existing
	return existing.Describe(existing.Description{Server: c.kube.cfg.Host, ServerVersion: kubernetesVersion,
		RunID: c.id, Nodes: c.nodes, Operator: c.s.Operator.Enabled, Installed: c.installed,
		Image: o.Image, Registry: o.Registry, RegistryAuth: registryAuthMode(c.s),
		RegistryCounted: o.RegistryMetrics != ""})
}

// refuseForeignConfig fails when the cluster has a ClusterPodPlacementConfig the run did not
// create: an archgate configured by someone else would gate the run's pods (passes without the
// operator) or be reconfigured by the run.
func (c *existingCluster) refuseForeignConfig(ctx context.Context) error {
	cppc := &v1beta1.ClusterPodPlacementConfig{}
	err := c.kube.crc.Get(ctx, crclient.ObjectKey{Name: v1beta1.SingletonName}, cppc)
	switch {
	case err == nil:
		return fmt.Errorf("ClusterPodPlacementConfig %s exists in the cluster already: the run configures archgate itself; run against a cluster without one", cppc.Name)
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	default:
		return fmt.Errorf("reading ClusterPodPlacementConfig %s: %w", v1beta1.SingletonName, err)
	}
}

// startArchgate installs archgate from deploy/ (make deploy with Image) unless the cluster has
// its operator already, waits for the operator, creates as the cluster's admin would the
// registry's CA ConfigMap, the global pull secret and the ClusterPodPlacementConfig of the
// scenario (all labelled with the run) and waits until the components rolled out and the
// webhook gates pods.
func (c *existingCluster) startArchgate(ctx context.Context, probe probe) (components, error) {
	t := time.Now()
	if err := c.install(ctx); err != nil {
		return nil, err
	}
	if err := waitDeploymentAvailable(ctx, c.kube.client, existing.DeployNamespace, operatorDeployment); err != nil {
		return nil, err
	}
	admin := &adminConfig{crc: c.kube.crc, namespace: existing.DeployNamespace, spec: c.s.Operator.ClusterConfig,
		global: c.s.Operator.GlobalPullSecret, labels: map[string]string{workload.LabelRun: c.id}}
	if err := admin.write(ctx, c.registry()); err != nil {
		return nil, err
	}
	if err := waitRolledOut(ctx, c.kube, existing.DeployNamespace); err != nil {
		return nil, err
	}
	if err := probe.waitGated(ctx, c.kube.crc, c.registry().host, renderedGateWait); err != nil {
		return nil, err
	}
	c.logf("archgate installed and rolled out in %.1fs", time.Since(t).Seconds())
	return installedComponents{}, nil
}

// install runs make deploy with Image when the cluster has no archgate operator.
func (c *existingCluster) install(ctx context.Context) error {
	o := c.opts.Existing
	_, err := c.kube.client.AppsV1().Deployments(existing.DeployNamespace).Get(ctx, operatorDeployment, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if o.Image == "" {
			return fmt.Errorf("operator.enabled: the cluster has no archgate operator (Deployment %s/%s) and no --image was given to install one", existing.DeployNamespace, operatorDeployment)
		}
		c.logf("installing archgate from deploy/ (make deploy IMG=%s)", o.Image)
		// The run removes what it installed, also when the install fails half-way.
		c.installed = true
		if err := existing.Deploy(ctx, c.opts.RepoRoot, c.opts.Kubeconfig, "apply", o.Image); err != nil {
			return err
		}
		return existing.MarkInstalled(ctx, c.kube.client, c.id)
	case err != nil:
		return fmt.Errorf("reading Deployment %s/%s: %w", existing.DeployNamespace, operatorDeployment, err)
	}
	return nil
}

// waitDeploymentAvailable polls a Deployment until its Available condition is True.
func waitDeploymentAvailable(ctx context.Context, client kubernetes.Interface, ns, name string) error {
	deadline := time.Now().Add(operatorWait)
	for {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
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

func registryAuthMode(s *scenario.Scenario) string {
	if s.Registry.Auth == nil {
		return ""
	}
	return s.Registry.Auth.Mode
}
