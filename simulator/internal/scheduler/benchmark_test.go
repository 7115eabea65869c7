//go:build integration

package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/archgate/archgate/simulator/internal/fakenodes"
)

const (
	benchNodes = 200
	benchPods  = 2000
	// benchWorkers bounds concurrent writes, like a controller's workers.
	benchWorkers = 32
)

// BenchmarkScheduleUngated2000Pods creates 2000 gated pods over 200 nodes of
// four architectures, then removes every gate at once and measures until
// the embedded scheduler has bound all of them. It reports pods/s, the
// throughput ceiling the operator's gate removal feeds into.
func BenchmarkScheduleUngated2000Pods(b *testing.B) {
	ctx := b.Context()
	archs := []string{"amd64", "arm64", "ppc64le", "s390x"}
	var pools []fakenodes.NodePool
	for _, arch := range archs {
		pools = append(pools, fakenodes.DefaultPool("bench-"+arch, arch, benchNodes/len(archs)))
	}
	// The framework calls a benchmark more than once (b.N=1 first): the
	// nodes are created by the first call only.
	existing, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fakenodes.PoolLabel + "=bench-amd64"})
	if err != nil {
		b.Fatal(err)
	}
	if len(existing.Items) == 0 {
		if err := fakenodes.CreateNodes(ctx, client, pools, 50); err != nil {
			b.Fatal(err)
		}
	}
	var elapsed time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		ns := createNamespace(b, "bench")
		pods := createGatedPods(b, ns, archs)
		bound, stop := watchBound(b, ns)
		b.StartTimer()
		start := time.Now()
		ungate(b, ns, pods)
		select {
		case <-bound:
		case <-time.After(5 * time.Minute):
			b.Fatalf("not all %d pods bound within 5m", benchPods)
		}
		elapsed += time.Since(start)
		b.StopTimer()
		stop()
		if err := client.CoreV1().Pods(ns).DeleteCollection(context.Background(),
			*metav1.NewDeleteOptions(0), metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(benchPods*b.N)/elapsed.Seconds(), "pods/s")
}

func createGatedPods(b *testing.B, ns string, archs []string) []string {
	b.Helper()
	names := make([]string, benchPods)
	g, ctx := errgroup.WithContext(b.Context())
	g.SetLimit(benchWorkers)
	for i := range benchPods {
		names[i] = fmt.Sprintf("pod-%d", i)
		arch := archs[i%len(archs)]
		pod := gatedPod(ns, names[i], archAffinity(arch, corev1.NodeSelectorRequirement{
			Key: fakenodes.PoolLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"bench-" + arch},
		}))
		g.Go(func() error {
			_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return names
}

// watchBound returns a channel closed once every pod of ns has a node.
func watchBound(b *testing.B, ns string) (<-chan struct{}, func()) {
	b.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().Pods().Informer()
	var count atomic.Int64
	var once sync.Once
	done := make(chan struct{})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			oldPod, newPod := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			if oldPod.Spec.NodeName == "" && newPod.Spec.NodeName != "" &&
				count.Add(1) == benchPods {
				once.Do(func() { close(done) })
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	stopCh := make(chan struct{})
	factory.Start(stopCh)
	factory.WaitForCacheSync(stopCh)
	return done, func() { close(stopCh); factory.Shutdown() }
}

func ungate(b *testing.B, ns string, names []string) {
	b.Helper()
	patch := []byte(`[{"op":"remove","path":"/spec/schedulingGates"}]`)
	g, ctx := errgroup.WithContext(b.Context())
	g.SetLimit(benchWorkers)
	for _, name := range names {
		g.Go(func() error {
			_, err := client.CoreV1().Pods(ns).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}
