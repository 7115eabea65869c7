package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"

	"github.com/archgate/archgate/simulator/internal/floorpolicy"
	"github.com/archgate/archgate/simulator/internal/floorwebhook"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// startFloorWebhook starts and registers the floor webhook for a pass whose floor is the
// webhook and waits until the apiserver calls it. The returned stop unregisters it, waits
// until the apiserver no longer calls it, and stops it.
func (r *run) startFloorWebhook(ctx context.Context) (stop func(context.Context) error, err error) {
	if !r.cluster.reachesHarness() {
		return nil, fmt.Errorf("the floor webhook serves on the simulator's loopback, which an existing cluster's apiserver cannot reach")
	}
	crc, scheme, err := r.floorClient()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "archgate-sim-floor-")
	if err != nil {
		return nil, err
	}
	pods := r.plan.Pods
	answers := func(name string) *corev1.Affinity {
		if i, ok := workload.PodIndex(name); ok && i < len(pods) {
			return pods[i].HandwrittenAffinity()
		}
		return nil
	}
	srv, err := floorwebhook.Start(ctx, crc, floorwebhook.NewHandler(scheme, answers), dir)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	admitted := func(pod *corev1.Pod) bool { return pod.Labels[floorwebhook.Label] == floorwebhook.LabelValue }
	return r.awaitFloor(ctx, crc, "the floor webhook", admitted, srv.Unregister,
		func() error { return errors.Join(srv.Stop(), os.RemoveAll(dir)) })
}

// startFloorPolicy registers the floor policy for a pass whose floor is the policy and waits
// until the apiserver applies it. The returned stop unregisters it and waits until the
// apiserver no longer applies it.
func (r *run) startFloorPolicy(ctx context.Context) (stop func(context.Context) error, err error) {
	crc, _, err := r.floorClient()
	if err != nil {
		return nil, err
	}
	unregister, err := floorpolicy.Register(ctx, crc, floorpolicy.Options{
		OperatorNamespace: r.s.Operator.Namespace,
		Cluster:           &v1beta1.ClusterPodPlacementConfig{Spec: *r.s.Operator.ClusterConfig.DeepCopy()},
	})
	if err != nil {
		return nil, err
	}
	admitted := func(pod *corev1.Pod) bool { return pod.Labels[floorpolicy.Label] == floorpolicy.LabelValue }
	return r.awaitFloor(ctx, crc, "the floor policy", admitted, unregister, func() error { return nil })
}

// awaitFloor waits until the apiserver applies a floor just registered (the probe pod comes
// back admitted) and returns its stop: unregister, wait until the apiserver no longer applies
// it, release what it holds. On failure it unregisters and releases at once; name names the
// floor in the errors.
func (r *run) awaitFloor(ctx context.Context, crc crclient.Client, name string, admitted func(*corev1.Pod) bool,
	unregister func(context.Context) error, release func() error) (stop func(context.Context) error, err error) {
	probe, host := r.probe(), r.cluster.registry().host
	if err := probe.until(ctx, crc, host, 30*time.Second, "the apiserver applied "+name+" to a dry-run pod", admitted); err != nil {
		return nil, errors.Join(err, unregister(context.WithoutCancel(ctx)), release())
	}
	return func(ctx context.Context) error {
		if err := unregister(ctx); err != nil {
			return errors.Join(err, release())
		}
		gone := func(pod *corev1.Pod) bool { return !admitted(pod) }
		return errors.Join(probe.until(ctx, crc, host, 30*time.Second, "the apiserver stopped applying "+name, gone), release())
	}, nil
}

// floorClient is a client of the run's apiserver for the floors' registrations and probes.
func (r *run) floorClient() (crclient.Client, *runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	crc, err := crclient.New(r.kube.cfg, crclient.Options{Scheme: scheme})
	return crc, scheme, err
}

// probe is the dry-run pod that shows an admission webhook acts: the plan's first pod,
// unpinned, in the run's probe namespace.
type probe struct {
	id          string
	pod         workload.Pod
	cpu, memory resource.Quantity
}

// probe is the run's probe.
func (r *run) probe() probe {
	pod := r.plan.Pods[0]
	pod.ArchAffinity, pod.NodeSelectorArch, pod.PullSecret, pod.Namespace = "", "", false, 0
	return probe{id: r.id, pod: pod, cpu: *r.s.Workload.Requests.CPU, memory: *r.s.Workload.Requests.Memory}
}

// object is the probe pod in namespace ns, its images at host, without init containers.
func (p probe) object(host, ns string) *corev1.Pod {
	pod := p.pod.Object(workload.ObjectOptions{Host: host, Namespaces: []string{ns}, CPU: p.cpu, Memory: p.memory})
	pod.Spec.InitContainers = nil
	return pod
}

// until dry-runs the creation of the probe pod, its images at host, until done accepts the
// pod the apiserver returns, polling every 200 ms for at most wait; what names the awaited
// state in the error.
func (p probe) until(ctx context.Context, crc crclient.Client, host string, wait time.Duration, what string, done func(*corev1.Pod) bool) error {
	name := fmt.Sprintf("sim-%s-probe", p.id)
	probeNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{workload.LabelRun: p.id}}}
	if err := crc.Create(ctx, probeNS); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		pod := p.object(host, name)
		err := crc.Create(ctx, pod, crclient.DryRunAll)
		if err == nil && done(pod) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %s (last error: %v)", wait, what, err)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}
