package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/simulator/internal/floorwebhook"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// startFloorWebhook starts and registers the floor webhook for the
// handwritten pass (handwrittenViaWebhook) and waits until the apiserver
// calls it. The returned stop unregisters it, waits until the apiserver no
// longer calls it, and stops it.
func (r *run) startFloorWebhook(ctx context.Context) (stop func(context.Context) error, err error) {
	if r.ext != nil {
		return nil, fmt.Errorf("handwrittenViaWebhook: the floor webhook serves on the simulator's loopback, which an existing cluster's apiserver cannot reach")
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	crc, err := crclient.New(r.cfg, crclient.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.tmp, "floor-webhook")
	if err := os.MkdirAll(dir, 0o700); err != nil {
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
		return nil, err
	}
	admitted := func(pod *corev1.Pod) bool { return pod.Labels[floorwebhook.Label] == floorwebhook.LabelValue }
	if err := r.dryRunUntil(ctx, crc, 30*time.Second, "the floor webhook admitted a dry-run pod", admitted); err != nil {
		return nil, errors.Join(err, srv.Unregister(context.WithoutCancel(ctx)), srv.Stop())
	}
	return func(ctx context.Context) error {
		if err := srv.Unregister(ctx); err != nil {
			return errors.Join(err, srv.Stop())
		}
		gone := func(pod *corev1.Pod) bool { return !admitted(pod) }
		return errors.Join(r.dryRunUntil(ctx, crc, 30*time.Second, "the apiserver stopped calling the floor webhook", gone), srv.Stop())
	}, nil
}

// dryRunUntil dry-runs the creation of a probe pod (the plan's first pod,
// unpinned, in the run's probe namespace) until done accepts the pod the
// apiserver returns, polling every 200 ms for at most wait; what names the
// awaited state in the error.
func (r *run) dryRunUntil(ctx context.Context, crc crclient.Client, wait time.Duration, what string, done func(*corev1.Pod) bool) error {
	name := fmt.Sprintf("sim-%s-probe", r.id)
	probeNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{workload.LabelRun: r.id}}}
	if err := crc.Create(ctx, probeNS); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	probe := r.plan.Pods[0]
	probe.ArchAffinity, probe.NodeSelectorArch, probe.PullSecret, probe.Namespace = "", "", false, 0
	deadline := time.Now().Add(wait)
	for {
		pod := probe.Object(workload.ObjectOptions{Host: r.registryHost(), Namespaces: []string{name},
			CPU: *r.s.Workload.Requests.CPU, Memory: *r.s.Workload.Requests.Memory})
		pod.Spec.InitContainers = nil
		err := crc.Create(ctx, pod, crclient.DryRunAll)
		if err == nil && done(pod) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %s (last error: %v)", wait, what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
