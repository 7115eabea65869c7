package runner

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// cluster is where a run's pods go, as clusterloader2's providers hide where the cluster comes
// from. Two implementations, each owning its parts and removing them in stop:
// simulatedCluster (envtest, the embedded scheduler, fake nodes, the fake registry, archgate
// started by the run) and existingCluster (the cluster of --kubeconfig, kwok nodes, its
// registry, archgate installed from deploy/).
type cluster interface {
	// start brings the cluster up (or connects to it) and creates the scenario's nodes; it
	// returns the clients and each node's "os/arch".
	start(ctx context.Context) (*kube, map[string]string, error)
	// stop removes what the cluster started and what the run created in it.
	stop()
	// settle waits until the cluster is quiet enough for a pass to measure itself only.
	settle(ctx context.Context) error
	// startArchgate runs archgate's components the cluster's way and returns them once the
	// webhook gates pods; probe is the dry-run pod that shows it.
	startArchgate(ctx context.Context, probe probe) (components, error)
	// registry is how pods and pull secrets reach the cluster's registry.
	registry() registryAccess
	// countRegistry starts counting the registry's requests.
	countRegistry(ctx context.Context) (registryCount, error)
	// step builds a timeline event that acts on the cluster (its registry); false for others.
	step(ev scenario.Event) (step, bool)
	// confine adjusts a pod so that it stays on the run's nodes; nil when all nodes are the run's.
	confine() func(*corev1.Pod)
	// reachesHarness reports whether the cluster's apiserver and pods reach the simulator's
	// loopback (the floor webhook, the attacker's hosts).
	reachesHarness() bool
	// fakeKubelet reports whether the run writes its pods' statuses as the nodes' kubelet (the
	// nodes are the run's fakes), rather than the cluster's kwok.
	fakeKubelet() bool
	// schedulerSLI reads the scheduler's SLI histogram; nil when it is not visible.
	schedulerSLI(ctx context.Context) []stats.Bucket
	// processes are the cluster's processes that serve pprof (the scheduler).
	processes() []*operand.Process
	// block is the report's cluster block; nil for the simulated cluster.
	block(kubernetesVersion string) *report.Cluster
}

// kube is the run's connection to the cluster's API, made by the cluster's start.
type kube struct {
	cfg *rest.Config
	// client creates and watches in protobuf (see connect).
	client kubernetes.Interface
	// crc knows archgate's API types, for the objects a cluster admin writes.
	crc crclient.Client
	// controlPlane names the control plane for the report; version is the server's.
	controlPlane, version string
}

// connect makes the run's clients for cfg and reads the server's version.
func connect(cfg *rest.Config, controlPlane string) (*kube, error) {
	// The harness creates and watches pods in protobuf, as the controllers
	// that create pods in a cluster (ReplicaSet, Job) and kube-scheduler do:
	// JSON would charge the apiserver an encoding no cluster pays.
	harness := rest.CopyConfig(cfg)
	harness.ContentType = k8sruntime.ContentTypeProtobuf
	harness.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(harness)
	if err != nil {
		return nil, err
	}
	scheme := k8sruntime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1beta1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	crc, err := crclient.New(cfg, crclient.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	k := &kube{cfg: cfg, client: client, crc: crc, controlPlane: controlPlane}
	if v, err := client.Discovery().ServerVersion(); err == nil {
		k.version = v.GitVersion
	}
	return k, nil
}

// registryAccess is how the run's pods and pull secrets reach a cluster's registry.
type registryAccess struct {
	// host is the host:port pods' image references point at; hang the attacker's host that
	// never answers.
	host, hang string
	// ca is the registry's CA (PEM), nil without TLS or when the components get it otherwise.
	ca []byte
	// user and password are the account pull secrets carry.
	user, password string
}

// registryCount reads the registry's stats for pods since counting started; nil stats when the
// registry's counters are not visible.
type registryCount func(ctx context.Context, pods []workload.Pod) (*report.RegistryStats, error)

// cleanups are the cleanups of a part of the run, run in reverse order by run.
type cleanups []func()

func (c *cleanups) add(f func()) { *c = append(*c, f) }

func (c *cleanups) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
	*c = nil
}

// prepareNamespace creates a workload namespace's pull secret (scenarios with registry.auth)
// and PodPlacementConfigs, the i-th namespace's, and returns how many PodPlacementConfigs.
func prepareNamespace(ctx context.Context, crc crclient.Client, s *scenario.Scenario, reg registryAccess, ns string, i int) (int, error) {
	if s.Registry.Auth != nil {
		if err := createPullSecret(ctx, crc, pullSecret(ns, workload.PullSecretName, reg.host, reg.user, reg.password)); err != nil {
			return 0, err
		}
	}
	ppcs := podPlacementConfigs(s, ns, i)
	for _, ppc := range ppcs {
		if err := crc.Create(ctx, ppc); err != nil {
			return 0, fmt.Errorf("creating PodPlacementConfig %s/%s: %w", ppc.Namespace, ppc.Name, err)
		}
	}
	return len(ppcs), nil
}
