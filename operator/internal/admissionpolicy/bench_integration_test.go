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
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/admissionpolicy"
	"github.com/archgate/archgate/operator/internal/knownimages"
)

// BenchmarkPolicyAdmission is what kube-apiserver spends to admit one pod (a dry-run create: the
// whole admission chain, no storage) through archgate's policy, placed or gated, against the
// same pod carrying the policy's affinity as written by hand in a namespace the policy does
// not match, and against a policy with archgate's registration that writes archgate's
// placement of that pod as constants (installOutputOnlyPolicy): what archgate's policy allocates
// beyond it is the reading and deciding, the rest is what any admission pays to write the
// placement placement.Decide wants. The figures are the apiserver's own: bytes its Go runtime
// allocated and CPU seconds its process used over a batch of pods, per pod. The cluster's
// weights are 10k-pods-policy's.
func BenchmarkPolicyAdmission(b *testing.B) {
	const batch = 500
	cluster := applyCluster(b, v1beta1.ClusterPodPlacementConfigSpec{
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{outputOnlyNamespace},
		}}},
		Plugins: &v1beta1.Plugins{
			NodeAffinityScoring: &v1beta1.NodeAffinityScoring{Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{
				{Architecture: "arm64", Weight: 40}, {Architecture: "amd64", Weight: 10},
			}},
		},
	})
	ensureNamespace(b, "team")
	ensureNamespace(b, outputOnlyNamespace)
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
	placed := admit(b, placedPod)
	handwritten := pod(operatorNamespace, published[0].Ref)
	handwritten.Spec.Affinity = placed.Spec.Affinity
	outputOnly := pod(outputOnlyNamespace, published[0].Ref)
	installOutputOnlyPolicy(b, cluster, outputOnly, placed)
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"affinity by hand, no policy", handwritten},
		{"placement written by a policy that reads nothing", outputOnly},
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

// outputOnlyNamespace holds the pods outputOnlyPolicy admits; archgate's policy leaves it out.
const outputOnlyNamespace = "output-only"

// installOutputOnlyPolicy installs outputOnlyPolicy for pods of outputOnlyNamespace like pod,
// writing what archgate's policy wrote to placed, and waits until the apiserver applies it.
func installOutputOnlyPolicy(b *testing.B, cluster *v1beta1.ClusterPodPlacementConfig, pod, placed *corev1.Pod) {
	b.Helper()
	opts := admissionpolicy.Options{Name: "archgate-output-only", OperatorNamespace: operatorNamespace, Cluster: cluster}
	policy, binding := admissionpolicy.Policy(opts), admissionpolicy.Binding(opts)
	policy.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: outputOnlyNamespace}}
	policy.Spec.ParamKind, policy.Spec.Variables, binding.Spec.ParamRef = nil, nil, nil
	policy.Spec.Mutations[0].JSONPatch.Expression = outputOnlyPatch(pod, placed)
	policy.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	for _, obj := range []client.Object{policy, binding} {
		if err := k8s.Patch(b.Context(), obj, client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil {
			b.Fatalf("applying %T: %v", obj, err)
		}
	}
	err := wait.PollUntilContextTimeout(b.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got := admit(b, pod)
		return equality.Semantic.DeepEqual(got.Spec.Affinity, placed.Spec.Affinity), nil
	})
	if err != nil {
		b.Fatalf("the output-only policy never took effect: %v", err)
	}
}

// outputOnlyPatch is a JSONPatch expression that adds to pod, as constants, the labels,
// annotations and node affinity placed has and pod has not (pod has labels and annotations of
// its own and no affinity, as the benchmark's pods). A pod that already carries them is left
// alone, as archgate's policy leaves a pod it placed on its reinvocation.
func outputOnlyPatch(pod, placed *corev1.Pod) string {
	var ops []string
	for _, field := range []struct {
		name          string
		before, after map[string]string
	}{{"labels", pod.Labels, placed.Labels}, {"annotations", pod.Annotations, placed.Annotations}} {
		added := map[string]string{}
		for k, v := range field.after {
			if _, ok := field.before[k]; !ok {
				added[k] = fmt.Sprintf("%q", v)
			}
		}
		ops = append(ops, admissionpolicy.MapsPatch(field.name, added))
	}
	ops = append(ops, "[JSONPatch{op: 'add', path: '/spec/affinity', value: "+celAffinity(placed.Spec.Affinity)+"}]")
	return fmt.Sprintf("%q in object.metadata.?annotations.orValue({}) ? [] :\n%s",
		v1beta1.AnnotationAdmissionPolicyPlacement, strings.Join(ops, " +\n"))
}

// celAffinity writes a node affinity as a JSONPatch value, as archgate's policy writes its
// parts (admissionpolicy.Object).
func celAffinity(a *corev1.Affinity) string {
	requirements := func(rs []corev1.NodeSelectorRequirement) string {
		out := make([]string, len(rs))
		for i, r := range rs {
			values := make([]string, len(r.Values))
			for j, v := range r.Values {
				values[j] = fmt.Sprintf("%q", v)
			}
			out[i] = admissionpolicy.Object("key", fmt.Sprintf("%q", r.Key), "operator", fmt.Sprintf("%q", r.Operator), "values", "["+strings.Join(values, ", ")+"]")
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	var terms []string
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		terms = append(terms, admissionpolicy.Object("matchExpressions", requirements(t.MatchExpressions)))
	}
	var prefs []string
	for _, p := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		prefs = append(prefs, admissionpolicy.Object("weight", fmt.Sprint(p.Weight), "preference", admissionpolicy.Object("matchExpressions", requirements(p.Preference.MatchExpressions))))
	}
	return admissionpolicy.Object("nodeAffinity", admissionpolicy.Object(
		"requiredDuringSchedulingIgnoredDuringExecution", admissionpolicy.Object("nodeSelectorTerms", "["+strings.Join(terms, ", ")+"]"),
		"preferredDuringSchedulingIgnoredDuringExecution", "["+strings.Join(prefs, ", ")+"]"))
}
