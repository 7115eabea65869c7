package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"

	"github.com/archgate/archgate/simulator/internal/floorgate"
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

// startFloorPolicy registers the floor policy for a pass whose floor is a policy (placement:
// the one writing archgate's whole placement) and waits until the apiserver applies it. The
// returned stop unregisters it and waits until the apiserver no longer applies it.
func (r *run) startFloorPolicy(ctx context.Context, placement bool) (stop func(context.Context) error, err error) {
	crc, _, err := r.floorClient()
	if err != nil {
		return nil, err
	}
	unregister, err := floorpolicy.Register(ctx, crc, floorpolicy.Options{
		OperatorNamespace: r.s.Operator.Namespace,
		Cluster:           &v1beta1.ClusterPodPlacementConfig{Spec: *r.s.Operator.ClusterConfig.DeepCopy()},
		Placement:         placement,
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

// floorGate is the gate of a floor pass with floorGate: the registry model's time for each
// image (delay), and a release that writes the pod's required affinity and removes the gate
// in one patch, as archgate's release does (the floor's admission leaves a gated pod alone,
// as archgate's does).
func (r *run) floorGate(ctx context.Context, namespaces []string) *floorgate.Gate {
	pods := r.plan.Pods
	release := func(i int) error {
		patch, err := releasePatch(pods[i])
		if err != nil {
			return err
		}
		return retryBusy(ctx, func() error {
			_, err := r.kube.client.CoreV1().Pods(namespaces[pods[i].Namespace]).Patch(ctx, workload.PodName(i), types.JSONPatchType, patch, metav1.PatchOptions{})
			return err
		})
	}
	return floorgate.New(floorgate.Options{Delay: r.registryModelDelay(), Release: release})
}

// releasePatch is the JSON patch that releases pod from the floor's gate: the affinity its
// images need (none when it pins its architecture itself or runs anywhere), then the gate
// removed, tested first so that a gate not the floor's is never dropped.
func releasePatch(pod workload.Pod) ([]byte, error) {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	ops := []op{{Op: "test", Path: "/spec/schedulingGates/0/name", Value: v1beta1.SchedulingGateName}}
	if a := pod.HandwrittenAffinity(); a != nil {
		ops = append(ops, op{Op: "add", Path: "/spec/affinity", Value: a})
	}
	ops = append(ops, op{Op: "remove", Path: "/spec/schedulingGates"})
	return json.Marshal(ops)
}

// admitFloorGate gates pod i (its object pod, about to be created) when the floor's gate must
// hold it, as archgate would: a workload pod, its architecture not pinned by a nodeSelector,
// naming an image not read yet. It reports whether it gated the pod; a nil gate gates nothing.
func (r *run) admitFloorGate(gate *floorgate.Gate, pods []workload.Pod, i int, pod *corev1.Pod) bool {
	if gate == nil || i >= len(r.plan.Pods) || pods[i].NodeSelectorArch != "" || !gate.Admit(i, pods[i].Images()) {
		return false
	}
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1beta1.SchedulingGateName})
	return true
}

// registryModelDelay is the time the scenario's registry latency adds to the least a reader
// asks for an image: its manifest, and the config blob of a single-platform manifest. The
// draws are the registry's own distribution, seeded by the scenario's seed and the reference,
// so an image costs the same in every run. The TLS handshake, the /v2/ ping and the serving
// itself are left out: the floor is what no reader can avoid.
func (r *run) registryModelDelay() func(ref string) time.Duration {
	faults, err := baseFaults(r.s)
	if err != nil {
		faults = fakeregistry.Faults{} // validated when the registry started
	}
	catalog := r.opts.Scenario.Catalog
	return func(ref string) time.Duration {
		h := fnv.New64a()
		h.Write([]byte(ref))
		rng := rand.New(rand.NewPCG(uint64(r.s.Seed), h.Sum64()))
		kinds := []fakeregistry.RequestKind{fakeregistry.KindManifestGet}
		if im, err := catalog.Image(ref); err == nil && !im.Format.IsList() {
			kinds = append(kinds, fakeregistry.KindBlobGet)
		}
		var d time.Duration
		for _, k := range kinds {
			if l, ok := faults.LatencyFor(k); ok {
				d += l.Sample(rng)
			}
		}
		return d
	}
}
