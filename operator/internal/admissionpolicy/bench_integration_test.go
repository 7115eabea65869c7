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

package admissionpolicy_test

import (
	"bytes"
	"fmt"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/knownimages"
)

// BenchmarkPolicyAdmission is what kube-apiserver spends to admit one pod (a dry-run create: the
// whole admission chain, no storage) through archgate's policy, placed or gated, against the
// same pod carrying the policy's affinity as written by hand in a namespace the policy does
// not match. The figures are the apiserver's own: bytes its Go runtime allocated and CPU
// seconds its process used over a batch of pods, per pod. The cluster's weights are
// 10k-pods-policy's.
func BenchmarkPolicyAdmission(b *testing.B) {
	const batch = 500
	cluster := applyCluster(b, v1beta1.ClusterPodPlacementConfigSpec{Plugins: &v1beta1.Plugins{
		NodeAffinityScoring: &v1beta1.NodeAffinityScoring{Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{
			{Architecture: "arm64", Weight: 40}, {Architecture: "amd64", Weight: 10},
		}},
	}})
	ensureNamespace(b, "team")
	pod := func(namespace, image string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "bench-", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"checksum/config": "0123456789abcdef"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "app", Image: published[1].Ref}, {Name: "sidecar", Image: image},
			}},
		}
	}
	placedPod := pod("team", published[0].Ref)
	installPolicy(b, cluster, knownimages.ImageParameters(published), placedPod, func(p *corev1.Pod) bool {
		return p.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission
	})
	handwritten := pod(operatorNamespace, published[0].Ref)
	handwritten.Spec.Affinity = admit(b, placedPod).Spec.Affinity
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"affinity by hand, no policy", handwritten},
		{"policy places", placedPod},
		{"policy gates", pod("team", unpublished[0])},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var allocated, cpu float64
			for b.Loop() {
				before := apiserverTotals(b, cs)
				for range batch {
					if err := k8s.Create(b.Context(), bc.pod.DeepCopy(), client.DryRunAll); err != nil {
						b.Fatal(err)
					}
				}
				after := apiserverTotals(b, cs)
				allocated += after.allocated - before.allocated
				cpu += after.cpu - before.cpu
			}
			pods := float64(b.N * batch)
			b.ReportMetric(allocated/pods/1024, "apiserver-KiB/pod")
			b.ReportMetric(cpu/pods*1e6, "apiserver-cpu-µs/pod")
		})
	}
}

// totals are kube-apiserver's cumulative allocation and CPU.
type totals struct{ allocated, cpu float64 }

// apiserverTotals reads the apiserver's totals from its /metrics.
func apiserverTotals(b *testing.B, cs kubernetes.Interface) totals {
	b.Helper()
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	counter := func(name string) float64 {
		f, ok := families[name]
		if !ok || f.GetType() != dto.MetricType_COUNTER || len(f.GetMetric()) != 1 {
			b.Fatal(fmt.Errorf("the apiserver's /metrics has no single counter %s", name))
		}
		return f.GetMetric()[0].GetCounter().GetValue()
	}
	return totals{allocated: counter("go_gc_heap_allocs_bytes_total"), cpu: counter("process_cpu_seconds_total")}
}
