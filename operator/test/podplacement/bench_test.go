//go:build integration

/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package podplacement

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/internal/controller/podplacement"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/pkg/components"
)

// BenchmarkPlacementController measures the pod placement controller alone (no webhook, no
// scheduler) against a fake registry over TLS. Each iteration pre-creates a batch of gated pods
// (untimed), then starts a controller and times until the last pod is seen ungated through a
// watch. The controller is built as components builds it (same cache, client and reconciler options)
// but by hand, so that the "warm" case can hand every iteration the same pre-filled inspection
// cache.
//
//   - warm: every image of the batch is already cached;
//   - cold-unique: a fresh cache, every pod a different image;
//   - cold-shared: a fresh cache, 8 pods per image processed concurrently, which measures the
//     de-duplication of concurrent lookups.
//
// Reported: pods/s, registry manifest GETs and requests of every kind per unique image of the
// batch (the physical minimum is 1 manifest GET per image; single-manifest images also need
// their config blob, and containers/image pings /v2/ once per inspection), and apiserver writes
// per pod seen by the watch (1 is the minimum). ARCHGATE_BENCH_PODS sets the batch (default 500).
func BenchmarkPlacementController(b *testing.B) {
	if s.controllerStarted {
		b.Skip("the tests' controller is running in this process; run benchmarks alone with -run='^$'")
	}
	pods := 500
	if v, err := strconv.Atoi(os.Getenv("ARCHGATE_BENCH_PODS")); err == nil && v > 0 {
		pods = v
	}
	reg, images, dir := startBenchRegistry(b, pods)

	for _, bc := range []struct {
		name   string
		warm   bool
		unique int
	}{
		{"warm", true, pods},
		{"cold-unique", false, pods},
		{"cold-shared", false, max(pods/8, 1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			newInspector := func() *inspect.CachingInspector {
				ri, err := inspect.NewRegistryInspector(inspect.Options{
					RegistriesConfPath:    filepath.Join(dir, "registries.conf"),
					RegistriesConfDirPath: filepath.Join(dir, "registries.conf.d"),
					CertsDir:              filepath.Join(dir, "certs.d"),
					Timeout:               v1beta1.DefaultImageInspectionTimeout,
				})
				if err != nil {
					b.Fatal(err)
				}
				return inspect.NewCachingInspector(ri, inspect.CacheOptions{Size: v1beta1.DefaultImageCacheSize, TTL: v1beta1.DefaultImageCacheTTL, DigestSize: v1beta1.DefaultImageCacheSize})
			}
			batch := images[:bc.unique]
			var shared *inspect.CachingInspector
			if bc.warm {
				shared = newInspector()
				runBatch(b, shared, batch, pods) // fills the cache, untimed
			}
			var total benchTotals
			b.ResetTimer()
			for range b.N {
				insp := shared
				if insp == nil {
					insp = newInspector()
				}
				reg.Counters().Reset()
				total.add(runBatch(b, insp, batch, pods))
				snap := reg.Counters().Snapshot()
				for _, c := range snap.Manifests {
					total.manifestGets += c.Get
					total.manifestHeads += c.Head
				}
				total.requests += snap.Total()
				total.pings += snap.Requests[fakeregistry.KindPing]
			}
			b.StopTimer()
			images := float64(bc.unique * b.N)
			b.ReportMetric(float64(total.pods)/total.elapsed.Seconds(), "pods/s")
			b.ReportMetric(float64(total.manifestGets)/images, "manifest-GETs/image")
			b.ReportMetric(float64(total.manifestHeads)/images, "manifest-HEADs/image")
			b.ReportMetric(float64(total.requests)/images, "registry-requests/image")
			b.ReportMetric(float64(total.pings)/images, "pings/image")
			b.ReportMetric(float64(total.writes)/float64(total.pods), "writes/pod")
		})
	}
}

type benchTotals struct {
	pods, writes                                 int
	elapsed                                      time.Duration
	manifestGets, manifestHeads, requests, pings uint64
}

func (t *benchTotals) add(r batchResult) {
	t.pods += r.pods
	t.writes += r.writes
	t.elapsed += r.elapsed
}

type batchResult struct {
	pods, writes int
	elapsed      time.Duration
}

// startBenchRegistry serves `count` generated images of mixed formats and architecture sets
// over TLS and writes the podman configuration to trust it.
func startBenchRegistry(b *testing.B, count int) (*fakeregistry.Registry, []string, string) {
	b.Helper()
	catalog, err := fakeregistry.NewCatalog(fakeregistry.CatalogSpec{Generate: []fakeregistry.GenerateSpec{{
		Seed: 7, Count: count, Prefix: "bench/app", Tag: "v1",
		ArchSets: []fakeregistry.WeightedArchSet{
			{Platforms: []string{"linux/amd64"}, Weight: 5},
			{Platforms: []string{"linux/amd64", "linux/arm64"}, Weight: 3},
			{Platforms: []string{"linux/amd64", "linux/arm64", "linux/ppc64le", "linux/s390x"}, Weight: 2},
		},
		Formats: []fakeregistry.WeightedFormat{
			{Format: fakeregistry.FormatOCIIndex, Weight: 2},
			{Format: fakeregistry.FormatDockerManifestList, Weight: 1},
			{Format: fakeregistry.FormatOCIManifest, Weight: 1},
			{Format: fakeregistry.FormatDockerManifest, Weight: 1},
		},
		Attestations: 0.5,
	}}})
	if err != nil {
		b.Fatal(err)
	}
	reg, err := fakeregistry.Start(s.ctx, fakeregistry.Options{Catalog: catalog, TLS: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = reg.Close() })
	dir := b.TempDir()
	if _, err := reg.WriteCertsDir(filepath.Join(dir, "certs.d")); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "registries.conf"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "registries.conf.d"), 0o755); err != nil {
		b.Fatal(err)
	}
	var images []string
	for _, img := range catalog.Images() {
		images = append(images, reg.Reference(img.Repository, img.Tags[0]))
	}
	return reg, images, dir
}

// runBatch creates `pods` gated pods in a new namespace (untimed), starts a controller with the
// given inspector, and times until every pod was seen ungated.
func runBatch(b *testing.B, insp *inspect.CachingInspector, images []string, pods int) batchResult {
	b.Helper()
	b.StopTimer()
	ns := "bench-" + randomSuffix()
	if err := s.client.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	pw := watchPods(b, ns)
	names := make([]string, pods)
	var wg sync.WaitGroup
	errs := make(chan error, pods)
	sem := make(chan struct{}, 32)
	for i := range pods {
		names[i] = fmt.Sprintf("p-%05d", i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			p := pod(ns, names[i], images[i%len(images)])
			p.Labels[v1beta1.LabelSchedulingGate] = v1beta1.LabelValueGated
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1beta1.SchedulingGateName}}
			if err := s.client.Create(s.ctx, p); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	ctx, stop := context.WithCancel(s.ctx)
	done := make(chan error, 1)
	mgr := newBenchManager(b, insp)
	// Stop the controller on every exit path: a leftover one would take the next batch's pods.
	defer func() {
		stop()
		if err := <-done; err != nil {
			b.Errorf("controller: %v", err)
		}
	}()
	start := time.Now()
	b.StartTimer()
	go func() { done <- mgr.Start(ctx) }()
	writes := pw.untilUngated(b, names...)
	elapsed := time.Since(start)
	b.StopTimer()
	n := 0
	for _, w := range writes {
		n += w
	}
	return batchResult{pods: pods, writes: n, elapsed: elapsed}
}

// newBenchManager builds the controller as components.RunPlacementController does, with insp as its
// inspector.
func newBenchManager(b *testing.B, insp *inspect.CachingInspector) manager.Manager {
	b.Helper()
	cfg := rest.CopyConfig(s.cfg)
	cfg.QPS, cfg.Burst = components.DefaultQPS, components.DefaultBurst
	clientOpts := podplacement.ClientOptions()
	clientOpts.Log = logr.New(logf.NullLogSink{})
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 s.scheme,
		Logger:                 logr.New(logf.NullLogSink{}),
		Cache:                  podplacement.CacheOptions(),
		Client:                 clientOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		b.Fatal(err)
	}
	r, err := podplacement.New(podplacement.Options{Inspector: insp, Invalidator: insp,
		Workers: cmdline.DefaultWorkers, InspectWorkers: cmdline.DefaultInspectWorkers,
		RetryBaseDelay: cmdline.DefaultRetryBaseDelay, RetryMaxDelay: cmdline.DefaultRetryMaxDelay,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		b.Fatal(err)
	}
	return mgr
}
