package runner

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
	"github.com/archgate/archgate/simulator/internal/fakenodes"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/scheduler"
	"github.com/archgate/archgate/simulator/internal/stats"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// crdDir is where the operator's CRDs live, relative to the repository root.
const crdDir = "operator/config/crd/bases"

// simulatedCluster is the cluster a run starts itself: envtest's kube-apiserver and etcd, the
// scheduler (embedded or a process), fake nodes, the scenario's background load and, when
// archgate runs, the fake registry and archgate's components (renderedComponents or
// directComponents).
type simulatedCluster struct {
	opts    Options
	s       *scenario.Scenario
	id      string
	sampler *procs.Sampler
	logf    func(string, ...any)
	// dir holds the processes' files: kubeconfig, logs, certificates, the kubelet's pods.
	dir  string
	kube *kube
	// reg is the fake registry, nil until archgate starts (passes before ask no registry).
	reg *fakeRegistry
	// schedFamilies reads the scheduler's metrics; scheduler is its process (nil embedded).
	schedFamilies func(context.Context) ([]*dto.MetricFamily, error)
	scheduler     *operand.Process
	cleanups      cleanups
}

var _ cluster = (*simulatedCluster)(nil)

// start starts the control plane, the background load, the scheduler and the nodes. The
// clients are returned once connected, also with an error (the report names the control plane).
func (c *simulatedCluster) start(ctx context.Context) (*kube, map[string]string, error) {
	dir, err := os.MkdirTemp("", "archgate-sim-")
	if err != nil {
		return nil, nil, err
	}
	c.dir = dir
	c.cleanups.add(func() { os.RemoveAll(dir) })
	t := time.Now()
	if err := c.startControlPlane(ctx); err != nil {
		return c.kube, nil, err
	}
	if err := c.startBackground(ctx); err != nil {
		return c.kube, nil, err
	}
	if err := c.startControllerManager(ctx); err != nil {
		return c.kube, nil, err
	}
	c.logf("control plane ready in %.1fs (%s, Kubernetes %s)", time.Since(t).Seconds(), c.kube.controlPlane, c.kube.version)
	t = time.Now()
	if err := c.startScheduler(ctx); err != nil {
		return c.kube, nil, err
	}
	nodes, err := c.createNodes(ctx)
	if err != nil {
		return c.kube, nil, err
	}
	c.logf("scheduler started, %d nodes created in %.1fs", len(nodes), time.Since(t).Seconds())
	return c.kube, nodes, nil
}

func (c *simulatedCluster) stop() { c.cleanups.run() }

// startControlPlane starts envtest and installs the operator's CRDs.
func (c *simulatedCluster) startControlPlane(ctx context.Context) error {
	crds := filepath.Join(c.opts.RepoRoot, crdDir)
	// Aggregator routing sends webhook calls to the Service's endpoints
	// (the EndpointSlices package kubelet writes), as there is no
	// kube-proxy to route a ClusterIP.
	args := map[string]string{"enable-aggregator-routing": "true"}
	if c.s.ControlPlane.ClusterDefaults {
		maps.Copy(args, clusterDefaultArgs())
	}
	env, err := testenv.Start(testenv.Options{CRDDirectoryPaths: []string{crds}, APIServerArgs: args})
	if err != nil {
		return err
	}
	// Hand the guard the children before anything else can fail.
	for _, p := range procfs.Children(os.Getpid()) {
		if p.Name == "kube-apiserver" || p.Name == "etcd" {
			c.opts.Guard.Watch(p.ID)
		}
	}
	c.cleanups.add(func() {
		c.sampler.Sample() // last reading of the children's peak RSS
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		}
	})
	if c.kube, err = connect(env.Config, "envtest"); err != nil {
		return err
	}
	c.sampler.Sample()
	return ctx.Err()
}

// controllers are kube-controller-manager's default controllers but those whose work the
// simulator does itself or that fake nodes cannot serve: node lifecycle (the fake nodes renew no
// lease, so it would taint them unreachable); deployment, replicaset, endpoints and
// endpointslice (package kubelet rolls out archgate's Deployments as processes and writes their
// EndpointSlices, which these would overwrite).
const controllers = "*,-node-lifecycle-controller,-deployment-controller,-replicaset-controller," +
	"-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller"

// clusterDefaultArgs puts back what the harness's lean apiserver turns off (controlPlane.
// clusterDefaults): the ServiceAccount admission plugin, priority and fairness, and
// kube-apiserver's default in-flight limits. TaintNodesByCondition stays off: no node
// lifecycle controller would take its not-ready taint off the fake nodes.
func clusterDefaultArgs() map[string]string {
	return map[string]string{
		"disable-admission-plugins":      "TaintNodesByCondition",
		"enable-priority-and-fairness":   "true",
		"max-requests-inflight":          "400",
		"max-mutating-requests-inflight": "200",
	}
}

// kubeconfig writes the run's client configuration to a file for the
// component processes, once, and returns its path.
func (c *simulatedCluster) kubeconfig() (string, error) {
	path := filepath.Join(c.dir, "kubeconfig")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	rc := c.kube.cfg
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sim"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData,
		CertificateAuthority: rc.CAFile, InsecureSkipTLSVerify: rc.Insecure}
	cfg.AuthInfos["sim"] = &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData,
		ClientCertificate: rc.CertFile, ClientKey: rc.KeyFile, Token: rc.BearerToken, TokenFile: rc.BearerTokenFile,
		Username: rc.Username, Password: rc.Password}
	cfg.Contexts["sim"] = &clientcmdapi.Context{Cluster: "sim", AuthInfo: "sim"}
	cfg.CurrentContext = "sim"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing the components' kubeconfig: %w", err)
	}
	return path, nil
}

// logDir is where the component processes write their logs.
func (c *simulatedCluster) logDir() (string, error) {
	dir := filepath.Join(c.dir, "logs")
	return dir, os.MkdirAll(dir, 0o700)
}

// startScheduler starts the scheduler: as a process of the simulator's own
// binary (Options.SchedulerCommand), or embedded in this process.
func (c *simulatedCluster) startScheduler(ctx context.Context) error {
	opts := scheduler.Options{
		PercentageOfNodesToScore: c.s.Scheduler.PercentageOfNodesToScore,
		DisableEvents:            c.s.Scheduler.DisableEvents,
	}
	if c.opts.SchedulerCommand == nil {
		sched, err := scheduler.Start(ctx, c.kube.cfg, opts)
		if err != nil {
			return fmt.Errorf("starting the scheduler: %w", err)
		}
		c.cleanups.add(sched.Stop)
		c.schedFamilies = func(context.Context) ([]*dto.MetricFamily, error) { return legacyregistry.DefaultGatherer.Gather() }
		return nil
	}
	p, err := c.schedulerProcess(opts)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return fmt.Errorf("starting the scheduler: %w", err)
	}
	c.cleanups.add(p.Stop)
	c.schedFamilies, c.scheduler = p.Families, p
	return nil
}

// schedulerProcess describes the scheduler process.
func (c *simulatedCluster) schedulerProcess(opts scheduler.Options) (*operand.Process, error) {
	kc, err := c.kubeconfig()
	if err != nil {
		return nil, err
	}
	logs, err := c.logDir()
	if err != nil {
		return nil, err
	}
	ports, err := operand.FreePorts("127.0.0.1", 1)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cmd := append(append([]string(nil), c.opts.SchedulerCommand...), "scheduler", "--kubeconfig", kc, "--bind-address", addr,
		"--percentage-of-nodes-to-score", strconv.Itoa(int(opts.PercentageOfNodesToScore)))
	if opts.DisableEvents {
		cmd = append(cmd, "--disable-events")
	}
	base := "http://" + addr
	return &operand.Process{
		Name: report.ComponentScheduler, Command: cmd,
		ReadyURL: base + "/readyz", MetricsURL: base + "/metrics", PprofURL: base + "/debug/pprof",
		LogPath: filepath.Join(logs, "scheduler.log"),
		OnStart: func(pid int) { c.sampler.Watch(pid, report.ComponentScheduler) },
	}, nil
}

// startControllerManager starts kube-controller-manager when the scenario asks for it
// (controlPlane.controllerManager), without its serving port, for the whole run. Like a
// cluster's, each controller acts as its own ServiceAccount.
func (c *simulatedCluster) startControllerManager(ctx context.Context) error {
	if !c.s.ControlPlane.ControllerManager {
		return nil
	}
	bin := c.opts.ControllerManager
	if bin == "" {
		return fmt.Errorf("controllerManager: no kube-controller-manager binary given")
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("controllerManager: %w (make cluster-components builds it)", err)
	}
	kc, err := c.kubeconfig()
	if err != nil {
		return err
	}
	logs, err := c.logDir()
	if err != nil {
		return err
	}
	p := &operand.Process{Name: report.ComponentControllerManager, LogPath: filepath.Join(logs, "kube-controller-manager.log"),
		Command: []string{bin, "--kubeconfig", kc, "--leader-elect=false", "--secure-port=0",
			"--use-service-account-credentials", "--controllers=" + controllers},
		OnStart: func(pid int) { c.sampler.Watch(pid, report.ComponentControllerManager) }}
	if err := p.Start(ctx); err != nil {
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	c.cleanups.add(p.Stop)
	return nil
}

// startBackground starts the scenario's background load, if any, as a
// process of the simulator's own executable, for the whole run.
func (c *simulatedCluster) startBackground(ctx context.Context) error {
	b := c.s.Background
	if b == nil {
		return nil
	}
	if c.opts.SchedulerCommand == nil {
		return fmt.Errorf("background: needs the simulator's executable (not available with --in-process)")
	}
	logs, err := c.logDir()
	if err != nil {
		return err
	}
	cmd := append(append([]string(nil), c.opts.SchedulerCommand...), "burn", "--share", strconv.FormatFloat(b.CPUShare, 'f', -1, 64))
	p := &operand.Process{Name: report.ComponentBackground, Command: cmd, LogPath: filepath.Join(logs, "background.log"),
		StopTimeout: 5 * time.Second,
		OnStart:     func(pid int) { c.sampler.Watch(pid, report.ComponentBackground) }}
	if err := p.Start(ctx); err != nil {
		return fmt.Errorf("starting the background load: %w", err)
	}
	c.cleanups.add(p.Stop)
	return nil
}

// createNodes creates the scenario's node pools and returns each node's platform.
func (c *simulatedCluster) createNodes(ctx context.Context) (map[string]string, error) {
	var pools []fakenodes.NodePool
	platforms := map[string]string{}
	for _, p := range c.s.Nodes {
		pool := nodePool(c.id, p)
		pools = append(pools, pool)
		for i := range p.Count {
			platforms[pool.Node(i).Name] = p.OS + "/" + p.Arch
		}
	}
	if err := fakenodes.CreateNodes(ctx, c.kube.client, pools, 50); err != nil {
		return nil, err
	}
	// The scheduler learns about nodes from its informer; a pod tried
	// before that is requeued on the node's add event, so this only avoids
	// a needless first failure.
	return platforms, sleep(ctx, time.Second)
}

// nodePool is run id's pool of nodes for the scenario's pool p.
func nodePool(id string, p scenario.NodePoolSpec) fakenodes.NodePool {
	pool := fakenodes.DefaultPool("sim-"+id+"-"+p.Name, p.Arch, p.Count)
	pool.OS = p.OS
	pool.CPU, pool.Memory, pool.Pods = *p.Allocatable.CPU, *p.Allocatable.Memory, p.Allocatable.Pods
	pool.Taints = p.Taints
	return pool
}

// startArchgate starts the fake registry, then archgate's components as the scenario's
// operator.mode says: the operator and the Deployments it renders (renderedComponents), or
// the components themselves (directComponents).
func (c *simulatedCluster) startArchgate(ctx context.Context, probe probe) (components, error) {
	t := time.Now()
	reg, err := startFakeRegistry(ctx, c.s, c.opts.Scenario.Catalog, &c.cleanups)
	if err != nil {
		return nil, err
	}
	c.reg = reg
	var comps components
	if c.s.Operator.Mode == "" || c.s.Operator.Mode == scenario.OperatorModeOperator {
		comps, err = c.startRendered(ctx, probe)
	} else {
		comps, err = c.startDirect(ctx, probe)
	}
	if err != nil {
		return nil, err
	}
	c.logf("registry (%d images) and operator ready in %.1fs", len(c.opts.Scenario.Catalog.Images()), time.Since(t).Seconds())
	return comps, nil
}

// processEnv is what the components' processes need from the simulated cluster.
func (c *simulatedCluster) processEnv() (processEnv, error) {
	kc, err := c.kubeconfig()
	if err != nil {
		return processEnv{}, err
	}
	logs, err := c.logDir()
	if err != nil {
		return processEnv{}, err
	}
	return processEnv{binary: c.opts.Archgate, kubeconfig: kc, logs: logs, dir: c.dir,
		watch: func(name string, pid int) { c.sampler.Watch(pid, name) }}, nil
}

// registry is the fake registry's address and account; before it runs, names that resolve
// nowhere stand for it (a pass without the operator asks no registry, its references only
// need to be well-formed).
func (c *simulatedCluster) registry() registryAccess {
	if c.reg == nil {
		return registryAccess{host: "registry.sim.invalid:5000", hang: "hang.sim.invalid:5000"}
	}
	return c.reg.access()
}

func (c *simulatedCluster) countRegistry(context.Context) (registryCount, error) {
	if c.reg == nil {
		return func(context.Context, []workload.Pod) (*report.RegistryStats, error) { return nil, nil }, nil
	}
	return c.reg.count(c.opts.Scenario.Catalog), nil
}

func (c *simulatedCluster) step(ev scenario.Event) (step, bool) {
	if c.reg == nil {
		return step{}, false
	}
	return c.reg.step(ev, c.opts.Scenario.Catalog)
}

// confine is nil: every node of the simulated cluster is the run's.
func (c *simulatedCluster) confine() func(*corev1.Pod) { return nil }

func (c *simulatedCluster) reachesHarness() bool { return true }

func (c *simulatedCluster) fakeKubelet() bool { return true }

func (c *simulatedCluster) schedulerSLI(ctx context.Context) []stats.Bucket {
	if c.schedFamilies == nil {
		return nil
	}
	families, err := c.schedFamilies(ctx)
	if err != nil && len(families) == 0 {
		return nil
	}
	return schedulerSLI(families)
}

func (c *simulatedCluster) processes() []*operand.Process {
	if c.scheduler == nil {
		return nil
	}
	return []*operand.Process{c.scheduler}
}

func (c *simulatedCluster) block(string) *report.Cluster { return nil }

// configure creates archgate's namespace and writes its configuration as the admin does
// (adminConfig), with reg's CA when it has one.
func (c *simulatedCluster) configure(ctx context.Context, reg registryAccess) (*adminConfig, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.s.Operator.Namespace}}
	if err := c.kube.crc.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the operator namespace: %w", err)
	}
	admin := &adminConfig{crc: c.kube.crc, namespace: c.s.Operator.Namespace, spec: c.s.Operator.ClusterConfig,
		global: c.s.Operator.GlobalPullSecret}
	return admin, admin.write(ctx, reg)
}
