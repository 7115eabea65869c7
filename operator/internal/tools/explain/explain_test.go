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

package explain

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/pkg/components"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s, err := components.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// registry answers inspections from a map; a missing image is an error.
func registry(archs map[string][]string) inspect.Inspector {
	return inspect.InspectorFunc(func(_ context.Context, ref string, _ credentials.Candidates) (inspect.Result, error) {
		a, ok := archs[ref]
		if !ok {
			return inspect.Result{}, errors.New("manifest unknown")
		}
		return inspect.Result{Architectures: a}, nil
	})
}

// assertExplains gathers and renders the explanation of the pod key and checks that it holds
// every line of wants.
func assertExplains(t *testing.T, c client.Reader, key types.NamespacedName, opts Options, wants ...string) {
	t.Helper()
	f, err := Gather(context.Background(), c, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Render(&out, f); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("explanation lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("explanation:\n%s", got)
	}
}

func TestExplain(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "web-1",
			Labels: map[string]string{"app": "web", v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: v1beta1.PlacementArchSet,
				v1beta1.LabelExecFormatError: v1beta1.LabelValueTrue},
			Annotations: map[string]string{v1beta1.AnnotationArchitectures: "amd64,arm64"},
		},
		Spec: corev1.PodSpec{
			NodeName:       "node-1",
			InitContainers: []corev1.Container{{Name: "setup", Image: "registry.example/setup:1"}},
			Containers:     []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}}},
				}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 75, Preference: corev1.NodeSelectorTerm{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}},
				}}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: "Error", ExitCode: 1, Message: "exec /app: exec format error\n"}},
		}}},
	}
	objs := []client.Object{
		pod,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"env": "prod"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{v1beta1.NodeArchLabel: "s390x"}}},
		&v1beta1.ClusterPodPlacementConfig{
			ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
			Spec:       v1beta1.ClusterPodPlacementConfigSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		},
		&v1beta1.PodPlacementConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prefer-arm"},
			Spec: v1beta1.PodPlacementConfigSpec{Priority: 100, Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
				Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 75}},
			}}},
		},
		&corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "team-a", Name: "e1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "team-a", Name: "web-1"},
			Type:           corev1.EventTypeWarning, Reason: "InspectionRetried", Message: "registry.example: 503", ReportingController: "archgate-pod-placement",
		},
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} }).
		Build()
	opts := Options{
		Inspector:         registry(map[string][]string{"registry.example/setup:1": {"amd64", "arm64", "s390x"}, "registry.example/app:1": {"amd64", "arm64"}}),
		OperatorNamespace: "archgate-system",
	}
	key := types.NamespacedName{Namespace: "team-a", Name: "web-1"}
	t.Run("summary", func(t *testing.T) {
		f, err := Gather(context.Background(), c, key, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := Summary{
			Pod: "team-a/web-1", Phase: "Running", Node: "node-1", NodeArchitecture: "s390x", Misplaced: ptr.To(true),
			SchedulingGates: []string{},
			AdmissionReasons: []string{"namespace team-a is selected by the namespaceSelector env=prod",
				"the pod's required node affinity already constrains kubernetes.io/arch: archgate leaves it alone and may only add preferences"},
			Labels: map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: v1beta1.PlacementArchSet,
				v1beta1.LabelExecFormatError: v1beta1.LabelValueTrue},
			Annotations: map[string]string{v1beta1.AnnotationArchitectures: "amd64,arm64"},
			Images: []SummaryImage{
				{Container: "setup", Init: true, Image: "registry.example/setup:1", Architectures: []string{"amd64", "arm64", "s390x"}},
				{Container: "app", Image: "registry.example/app:1", Architectures: []string{"amd64", "arm64"}},
			},
			Inspected: true, Compatible: []string{"amd64", "arm64"}, CompatibleComplete: true,
			ArchitectureConstraints: []string{"required, term 0: kubernetes.io/arch In [amd64 arm64]", "preferred, weight 75: kubernetes.io/arch In [arm64]"},
			PodPlacementConfigs:     []string{"team-a/prefer-arm"},
			Events:                  []SummaryEvent{{Type: corev1.EventTypeWarning, Reason: "InspectionRetried", Source: "archgate-pod-placement", Message: "registry.example: 503"}},
		}
		if diff := cmp.Diff(want, Summarize(f)); diff != "" {
			t.Errorf("Summarize (-want +got):\n%s", diff)
		}
	})
	assertExplains(t, c, key, opts,
		"Pod team-a/web-1: phase Running, node node-1",
		"namespace team-a is selected by the namespaceSelector env=prod",
		"label multiarch.openshift.io/placement=arch-set: the architectures every image supports were merged into the required node affinity",
		"annotation multiarch.openshift.io/architectures=amd64,arm64",
		"init:setup  registry.example/setup:1  amd64, arm64, s390x",
		"app         registry.example/app:1    amd64, arm64",
		"Compatible with every image: amd64, arm64",
		"required, term 0: kubernetes.io/arch In [amd64 arm64]",
		"preferred, weight 75: kubernetes.io/arch In [arm64]",
		"bound to node node-1 (kubernetes.io/arch=s390x): NOT supported by every image (misplaced)",
		"container app failed with an exec format error on node node-1 (kubernetes.io/arch=s390x): its binary is for another architecture",
		"runtime report (Error): exec /app: exec format error",
		"reported by the exec-format-error monitor (label multiarch.openshift.io/exec-format-error=true and a Warning Event)",
		"team-a/prefer-arm priority 100: prefers arm64=75",
		"Warning InspectionRetried (archgate-pod-placement): registry.example: 503",
	)
}

func TestExplainGatedPodInUnselectedNamespace(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "job-1", Labels: map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: v1beta1.SchedulingGateName}},
			Containers:      []corev1.Container{{Name: "app", Image: "registry.example/missing:1"}},
		},
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(pod,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}},
		&v1beta1.ClusterPodPlacementConfig{
			ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
			Spec:       v1beta1.ClusterPodPlacementConfigSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		},
		&v1beta1.PodPlacementConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "broken"},
			Spec: v1beta1.PodPlacementConfigSpec{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: "Bogus", Values: []string{"web"}},
			}}},
		}).Build()
	assertExplains(t, c, types.NamespacedName{Namespace: "dev", Name: "job-1"}, Options{Inspector: registry(nil)},
		"multiarch.openshift.io/scheduling-gate (archgate's): the pod placement controller has not processed the pod yet",
		"archgate ungate -n dev",
		"namespace dev is NOT selected by the namespaceSelector env=prod",
		"error: manifest unknown",
		"some could not be inspected",
		"none: the pod may land on any architecture",
		"ignored, as the controller ignores them: PodPlacementConfig dev/broken: invalid labelSelector",
	)
}

func TestExplainLocallyGatedPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "api-1", Labels: map[string]string{
			v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueGated, v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: v1beta1.LocalSchedulingGateName}, {Name: v1beta1.SchedulingGateName}},
			Containers:      []corev1.Container{{Name: "app", Image: "registry.example/api:1"}},
		},
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(pod,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		&v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}}).Build()
	assertExplains(t, c, types.NamespacedName{Namespace: "team-b", Name: "api-1"}, Options{Inspector: registry(map[string][]string{"registry.example/api:1": {"arm64"}})},
		"multiarch.openshift.io/local-scheduling-gate (archgate's local gate): namespace team-b's local controller has not applied its PodPlacementConfigs yet",
		"multiarch.openshift.io/scheduling-gate (archgate's): the pod placement controller has not processed the pod yet",
		"check the local controller (kubectl -n team-b get deploy archgate-local-controller)",
		"archgate ungate -n team-b --gate local",
		"label multiarch.openshift.io/local-scheduling-gate=gated: the namespace's local webhook gated the pod",
	)
}
