//go:build integration

package floorpolicy_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"

	"github.com/archgate/archgate/simulator/internal/floorpolicy"
	"github.com/archgate/archgate/simulator/internal/workload"
)

var k8s client.Client

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{}, func(env *testenv.Env) error {
		var err error
		k8s, err = testenv.Client(env.Config, clientgoscheme.AddToScheme)
		return err
	}))
}

// TestFloorPolicy creates the workload's pods with their answers through the floor policy
// and wants each stored as the handwritten pass creates it: the same affinity, the answer
// gone, the pod's own annotations kept, and the floor's label.
func TestFloorPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const ns = "floor-policy"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	unregister, err := floorpolicy.Register(ctx, k8s, floorpolicy.Options{OperatorNamespace: "archgate-system"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unregister(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("unregistering: %v", err)
		}
	})
	pods := map[string]struct {
		pod workload.Pod
		// unlabelled creates the pod without labels: the policy then adds the map itself.
		unlabelled bool
	}{
		"one architecture":   {pod: workload.Pod{Index: 1, Allowed: []string{"amd64"}}},
		"two architectures":  {pod: workload.Pod{Index: 2, Allowed: []string{"amd64", "arm64"}}},
		"none shared":        {pod: workload.Pod{Index: 3}},
		"runs anywhere":      {pod: workload.Pod{Index: 4, AnyArch: true}},
		"pins its own":       {pod: workload.Pod{Index: 5, Allowed: []string{"amd64", "s390x"}, ArchAffinity: "s390x"}},
		"with an annotation": {pod: workload.Pod{Index: 6, Allowed: []string{"ppc64le"}, AnnotationBytes: 16}},
		"without labels":     {pod: workload.Pod{Index: 7, Allowed: []string{"arm64"}}, unlabelled: true},
	}
	opts := workload.ObjectOptions{Host: "registry.example", Namespaces: []string{ns},
		Labels: map[string]string{"app": "floor"}, CPU: resource.MustParse("10m"), Memory: resource.MustParse("16Mi")}
	for name, tc := range pods {
		t.Run(name, func(t *testing.T) {
			p := tc.pod
			p.Containers = []string{fmt.Sprintf("app/%d:1", p.Index)}
			opts := opts
			if tc.unlabelled {
				opts.Labels = nil
			}
			answer := opts
			answer.HandwrittenAnswer = true
			handwritten := opts
			handwritten.HandwrittenAffinity = true
			want := p.Object(handwritten)
			var got *corev1.Pod
			// The apiserver applies a new policy once its informers have it: poll with a bound.
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				got = p.Object(answer)
				if err := k8s.Create(ctx, got, client.DryRunAll); err != nil {
					return false, err
				}
				return got.Labels[floorpolicy.Label] == floorpolicy.LabelValue, nil
			})
			if err != nil {
				t.Fatalf("the floor policy did not admit %s: %v", got.Name, err)
			}
			if diff := cmp.Diff(want.Spec.Affinity, got.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-handwritten +floor policy):\n%s", diff)
			}
			if diff := cmp.Diff(want.Annotations, got.Annotations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("annotations (-handwritten +floor policy):\n%s", diff)
			}
		})
	}
}

// TestFloorPolicyPlacement admits the same pods through archgate's policy, its params holding
// the pods' images, and through the floor policy writing archgate's placement from their
// answers, and wants both stored alike: the labels (the floor's own aside), the annotations
// and the node affinity.
func TestFloorPolicyPlacement(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const operatorNS, archgateNS, floorNS = "archgate-system", "placed-by-archgate", "placed-by-floor"
	for _, ns := range []string{operatorNS, archgateNS, floorNS} {
		if err := client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
			t.Fatal(err)
		}
	}
	// Each policy leaves the other's namespace out; the weights are 10k-pods-policy's.
	cluster := func(excluded string) *v1beta1.ClusterPodPlacementConfig {
		return &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}, Spec: v1beta1.ClusterPodPlacementConfigSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{excluded},
			}}},
			Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{Enabled: true,
				Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 40}, {Architecture: "amd64", Weight: 10}}}},
		}}
	}
	pods := map[string]workload.Pod{
		"one architecture, preferred":           {Index: 1, Containers: []string{"app/1:1"}, Allowed: []string{"arm64"}},
		"two architectures, both preferred":     {Index: 2, Containers: []string{"app/2:1"}, Allowed: []string{"amd64", "arm64"}},
		"no preferred architecture":             {Index: 3, Containers: []string{"app/3:1"}, Allowed: []string{"ppc64le", "s390x"}},
		"init container, three architectures":   {Index: 4, Containers: []string{"app/4:1"}, InitContainers: []string{"init/4:1"}, Allowed: []string{"amd64", "ppc64le", "s390x"}},
		"two containers, every architecture":    {Index: 5, Containers: []string{"app/5:1", "sidecar/5:1"}, Allowed: []string{"amd64", "arm64", "ppc64le", "s390x"}},
		"an image repeated, with an annotation": {Index: 6, Containers: []string{"app/6:1", "app/6:1"}, Allowed: []string{"amd64"}, AnnotationBytes: 16},
	}
	opts := workload.ObjectOptions{Host: "registry.example", Labels: map[string]string{"app": "floor"},
		CPU: resource.MustParse("10m"), Memory: resource.MustParse("16Mi")}
	images := map[string][]string{}
	for _, p := range pods {
		for _, c := range append(slices.Clone(p.InitContainers), p.Containers...) {
			images[opts.Host+"/"+c] = p.Allowed
		}
	}
	registerArchgatePolicy(ctx, t, operatorNS, cluster(floorNS), components.AdmissionPolicyParameters(images))
	unregister, err := floorpolicy.Register(ctx, k8s, floorpolicy.Options{OperatorNamespace: operatorNS, Cluster: cluster(archgateNS), Placement: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unregister(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("unregistering: %v", err)
		}
	})
	for name, p := range pods {
		t.Run(name, func(t *testing.T) {
			byArchgate := opts
			byArchgate.Namespaces = []string{archgateNS}
			byFloor := opts
			byFloor.Namespaces = []string{floorNS}
			byFloor.HandwrittenAnswer = true
			want := admitted(ctx, t, p.Object(byArchgate), func(pod *corev1.Pod) bool {
				return pod.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission
			})
			got := admitted(ctx, t, p.Object(byFloor), func(pod *corev1.Pod) bool {
				return pod.Labels[floorpolicy.Label] == floorpolicy.LabelValue
			})
			delete(got.Labels, floorpolicy.Label)
			if diff := cmp.Diff(want.Labels, got.Labels); diff != "" {
				t.Errorf("labels (-archgate's policy +floor policy):\n%s", diff)
			}
			if diff := cmp.Diff(want.Annotations, got.Annotations); diff != "" {
				t.Errorf("annotations (-archgate's policy +floor policy):\n%s", diff)
			}
			if diff := cmp.Diff(want.Spec.Affinity, got.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-archgate's policy +floor policy):\n%s", diff)
			}
		})
	}
}

// registerArchgatePolicy creates archgate's policy and binding for cluster, with params, until
// the test ends.
func registerArchgatePolicy(ctx context.Context, t *testing.T, operatorNS string, cluster *v1beta1.ClusterPodPlacementConfig, params map[string]string) {
	t.Helper()
	policy, binding := components.AdmissionPolicy(components.AdmissionPolicyOptions{Name: "archgate-placement", OperatorNamespace: operatorNS, Cluster: cluster})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: components.DefaultPlacementParametersConfigMap}, Data: params}
	for _, obj := range []client.Object{cm, policy, binding} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() {
			if err := client.IgnoreNotFound(k8s.Delete(context.WithoutCancel(ctx), obj)); err != nil {
				t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
			}
		})
	}
}

// admitted dry-runs the creation of pod until done says a policy admitted it (the apiserver
// applies a new policy once its informers have it: poll with a bound) and returns it.
func admitted(ctx context.Context, t *testing.T, pod *corev1.Pod, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got = pod.DeepCopy()
		if err := k8s.Create(ctx, got, client.DryRunAll); err != nil {
			return false, err
		}
		return done(got), nil
	})
	if err != nil {
		t.Fatalf("no policy admitted %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return got
}
