package webhook

import (
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/knownimages"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/internal/placementrules"
)

var placeNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// publishedIndex is what the controller would publish: the real encoding and parsing.
func publishedIndex(t testing.TB) *knownimages.Index {
	t.Helper()
	live := ptr.To(placeNow.Add(time.Minute))
	data, _, err := knownimages.Encode([]inspect.KnownImage{
		{Ref: "docker.io/library/multi:1", Architectures: []string{"amd64", "arm64"}, Expires: live},
		{Ref: "docker.io/library/arm:1", Architectures: []string{"arm64"}, Expires: live},
		{Ref: "docker.io/library/s390x:1", Architectures: []string{"s390x"}, Expires: live},
		{Ref: "docker.io/library/bundle:1", AnyArchitecture: true, Expires: live},
		{Ref: "docker.io/library/old:1", Architectures: []string{"amd64"}, Expires: ptr.To(placeNow)},
	}, knownimages.MaxDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := knownimages.Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func placementScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestPlaceAtAdmission(t *testing.T) {
	cluster := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled:   true,
			Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 40}},
		}}},
	}
	tainted := cluster.DeepCopy()
	tainted.Spec.ArchitectureTaints = []v1beta1.ArchitectureTaint{{Architecture: "arm64"}, {Architecture: "s390x", Key: "arch", Effect: corev1.TaintEffectNoExecute}}
	withRules := cluster.DeepCopy()
	withRules.Spec.PlacementRules = []v1beta1.PlacementRule{
		{Name: "batch-amd", Expression: "object.metadata.namespace.startsWith('batch')", RequiredArchitectures: []string{"amd64"}},
		{Name: "ml-arm", Expression: "object.metadata.?labels.?team.orValue('') == 'ml'",
			PreferredArchitectures: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 60}}},
		{Name: "needs-owner", Expression: "has(object.metadata.annotations) && object.metadata.annotations.owner == 'x'", RequiredArchitectures: []string{"amd64"}},
	}
	tests := map[string]struct {
		pod        string
		objects    []client.Object
		wantPlaced placement.Outcome // "" when the pod must be gated
	}{
		"no placement rule matches: placed as without rules": {
			pod:        `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects:    []client.Object{withRules},
			wantPlaced: placement.OutcomeArchSet,
		},
		"a rule narrows the required architectures": {
			pod:        `{"metadata":{"name":"p","namespace":"batch-1"},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects:    []client.Object{withRules},
			wantPlaced: placement.OutcomeArchSet,
		},
		"a rule's weights win over the cluster's": {
			pod:        `{"metadata":{"name":"p","namespace":"team","labels":{"team":"ml"}},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects:    []client.Object{withRules},
			wantPlaced: placement.OutcomeArchSet,
		},
		"a rule that fails for the pod: gated, the controller reports it": {
			pod:     `{"metadata":{"name":"p","namespace":"team","annotations":{"note":"x"}},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects: []client.Object{withRules},
		},
		"rules that leave no architecture: gated, the controller reports it": {
			pod:     `{"metadata":{"name":"p","namespace":"batch-1"},"spec":{"containers":[{"name":"a","image":"arm:1"}]}}`,
			objects: []client.Object{withRules},
		},
		"a tainted architecture in the set: its toleration is added": {
			pod:        `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects:    []client.Object{tainted},
			wantPlaced: placement.OutcomeArchSet,
		},
		"the pod's own tolerations are kept, the missing one appended": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"tolerations":[{"key":"gpu","operator":"Exists"}],` +
				`"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects:    []client.Object{tainted},
			wantPlaced: placement.OutcomeArchSet,
		},
		"the preferred-architecture label wins over the cluster's weights": {
			pod: `{"metadata":{"name":"p","namespace":"team","labels":{"multiarch.openshift.io/preferred-architecture":"amd64"}},` +
				`"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects:    []client.Object{cluster},
			wantPlaced: placement.OutcomeArchSet,
		},
		"every image known: placed with the cluster's preference": {
			pod:        `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects:    []client.Object{cluster},
			wantPlaced: placement.OutcomeArchSet,
		},
		"intersection of known images, labels and annotations kept": {
			pod: `{"metadata":{"name":"p","namespace":"team","labels":{"app":"web"},"annotations":{"note":"x"}},` +
				`"spec":{"initContainers":[{"name":"i","image":"arm:1"}],"containers":[{"name":"a","image":"docker.io/library/multi:1"}]}}`,
			wantPlaced: placement.OutcomeArchSet,
		},
		"the user's own affinity is kept and extended": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":` +
				`{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects:    []client.Object{cluster},
			wantPlaced: placement.OutcomeArchSet,
		},
		"images without binaries": {
			pod:        `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"bundle:1"}]}}`,
			wantPlaced: placement.OutcomeAnyArchitecture,
		},
		"a higher-priority PodPlacementConfig wins over the cluster's, placed": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects: []client.Object{cluster, &v1beta1.PodPlacementConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "prefer-amd64", Namespace: "team"},
				Spec: v1beta1.PodPlacementConfigSpec{Priority: 10, Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
					Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "amd64", Weight: 30}},
				}}},
			}},
			wantPlaced: placement.OutcomeArchSet,
		},
		"a pod weighting architectures itself is gated (the controller records the conflict)": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":` +
				`[{"weight":5,"preference":{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}]}}]}},"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects: []client.Object{cluster},
		},
		"an unknown image is gated": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"multi:1"},{"name":"b","image":"unknown:1"}]}}`,
		},
		"an expired image is gated": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"old:1"}]}}`,
		},
		"a pod with imagePullSecrets is gated": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"imagePullSecrets":[{"name":"s"}],"containers":[{"name":"a","image":"multi:1"}]}}`,
		},
		"images sharing no architecture are gated (the controller reports them)": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"arm:1"},{"name":"b","image":"s390x:1"}]}}`,
		},
		"an invalid PodPlacementConfig selector is gated (the controller reports it)": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`,
			objects: []client.Object{&v1beta1.PodPlacementConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "team"},
				Spec: v1beta1.PodPlacementConfigSpec{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: "Bogus"},
				}}},
			}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			configs := fake.NewClientBuilder().WithScheme(placementScheme(t)).WithObjects(tc.objects...).Build()
			h := NewSchedulingGate(nil, Options{
				OperatorNamespace: operatorNamespace, Known: publishedIndex(t), Configs: configs,
				Now: func() time.Time { return placeNow },
			})
			req := podRequest(t, tc.pod)
			resp, d := h.handle(t.Context(), req)
			var got placement.Outcome
			if d.placed != nil {
				got = d.placed.Outcome
			}
			if got != tc.wantPlaced {
				t.Fatalf("placed = %q, want %q (decision %+v)", got, tc.wantPlaced, d)
			}
			if err := resp.Complete(req); err != nil {
				t.Fatal(err)
			}
			if tc.wantPlaced == "" {
				assertPatchGates(t, tc.pod, resp.Patch)
				return
			}
			assertPatchPlaces(t, tc.pod, resp.Patch, tc.objects)
		})
	}
}

// assertPatchPlaces applies the patch as the apiserver would and checks that the pod is exactly
// what the controller would write when removing the gate (placement.Decide on the same inputs),
// without the gate, with the admission label value.
func assertPatchPlaces(t *testing.T, raw string, patch []byte, objects []client.Object) {
	t.Helper()
	before, after := applyPatch(t, raw, patch)
	want := before.DeepCopy()
	var images []placement.ImageArchitectures
	for _, img := range placement.PodImages(&want.Spec) {
		r, _ := publishedIndex(t).Lookup(img, placeNow)
		images = append(images, placement.ImageArchitectures{Architectures: r.Architectures, AnyArchitecture: r.AnyArchitecture})
	}
	var cluster *v1beta1.ClusterPodPlacementConfig
	var configs []v1beta1.PodPlacementConfig
	for _, o := range objects {
		switch c := o.(type) {
		case *v1beta1.ClusterPodPlacementConfig:
			cluster = c
		case *v1beta1.PodPlacementConfig:
			configs = append(configs, *c)
		}
	}
	taints, rules := v1beta1.ArchitectureTaintsOf(cluster), v1beta1.PlacementRulesOf(cluster)
	configs, cluster, _ = placement.ClusterStage(want, configs, cluster)
	evals := placementrules.New(placementrules.Options{}).Evaluate(t.Context(), rules, before)
	if len(evals.Failed()) > 0 {
		t.Fatalf("placed although placement rules failed: %v", evals.Failed())
	}
	d := placement.Decide(want, images, configs, cluster, placement.Constraints{Taints: taints, Rules: evals.Matched()})
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	want.Labels[v1beta1.LabelSchedulingGate] = v1beta1.LabelValueAdmission
	want.Labels[v1beta1.LabelPlacement] = d.Outcome.LabelValue()
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	maps.Copy(want.Annotations, d.Annotations())
	// The record is checked by what it does: undoing it gives the pod back as it came.
	want.Annotations[v1beta1.AnnotationAdmissionPlacement] = after.Annotations[v1beta1.AnnotationAdmissionPlacement]
	assertUndoRestores(t, raw, patch, before, after)
	if _, ok := want.Annotations[v1beta1.AnnotationPreferredAffinitySource]; ok != (len(d.Preferred.Applied) > 0) {
		t.Errorf("preferred-affinity-source annotation present = %t, weights applied = %v", ok, d.Preferred.Applied)
	}
	if diff := cmp.Diff(want, after); diff != "" {
		t.Errorf("placed pod (-want +got):\n%s", diff)
	}
	if len(after.Spec.SchedulingGates) != len(before.Spec.SchedulingGates) || v1beta1.HasSchedulingGate(&after.Spec) {
		t.Errorf("placed pod carries gates %v, want only those it came with (%v)", after.Spec.SchedulingGates, before.Spec.SchedulingGates)
	}
}

// TestPlaceAtAdmissionLocallyGated: a pod the namespace's local webhook gated gets only the
// required affinity at admission (its local gate carries the namespace's preferences), or the
// cluster-wide gate when the cluster-level preferences are on (they wait for the local decision).
func TestPlaceAtAdmissionLocallyGated(t *testing.T) {
	const pod = `{"metadata":{"name":"p","namespace":"team","labels":{"multiarch.openshift.io/local-scheduling-gate":"gated"}},` +
		`"spec":{"schedulingGates":[{"name":"multiarch.openshift.io/local-scheduling-gate"}],"containers":[{"name":"a","image":"multi:1"}]}}`
	ppc := &v1beta1.PodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "prefer-amd64", Namespace: "team"},
		Spec: v1beta1.PodPlacementConfigSpec{Priority: 10, Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "amd64", Weight: 30}},
		}}},
	}
	scoring := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 40}},
		}}},
	}
	rulePrefers := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{PlacementRules: []v1beta1.PlacementRule{{Name: "ml", Expression: "true",
			PreferredArchitectures: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 60}}}}},
	}
	ruleRequires := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{PlacementRules: []v1beta1.PlacementRule{{Name: "arm", Expression: "true",
			RequiredArchitectures: []string{"arm64"}}}},
	}
	for name, tc := range map[string]struct {
		objects    []client.Object
		wantPlaced bool
	}{
		"no cluster-level preferences: required affinity only":                   {objects: []client.Object{ppc}, wantPlaced: true},
		"cluster-level preferences: gated, after the local gate":                 {objects: []client.Object{ppc, scoring}},
		"a placement rule with preferences is a cluster-level preference: gated": {objects: []client.Object{ppc, rulePrefers}},
		"a placement rule that only requires: required affinity only, narrowed":  {objects: []client.Object{ppc, ruleRequires}, wantPlaced: true},
	} {
		t.Run(name, func(t *testing.T) {
			configs := fake.NewClientBuilder().WithScheme(placementScheme(t)).WithObjects(tc.objects...).Build()
			h := NewSchedulingGate(nil, Options{OperatorNamespace: operatorNamespace, Known: publishedIndex(t), Configs: configs,
				Now: func() time.Time { return placeNow }})
			req := podRequest(t, pod)
			resp, d := h.handle(t.Context(), req)
			if (d.placed != nil) != tc.wantPlaced {
				t.Fatalf("placed at admission = %t, want %t (decision %+v)", d.placed != nil, tc.wantPlaced, d)
			}
			if err := resp.Complete(req); err != nil {
				t.Fatal(err)
			}
			_, after := applyPatch(t, pod, resp.Patch)
			if !v1beta1.HasLocalSchedulingGate(&after.Spec) {
				t.Errorf("the local gate was lost: %v", after.Spec.SchedulingGates)
			}
			if v1beta1.HasSchedulingGate(&after.Spec) == tc.wantPlaced {
				t.Errorf("cluster gate on = %t, want %t", v1beta1.HasSchedulingGate(&after.Spec), !tc.wantPlaced)
			}
			if tc.wantPlaced {
				assertPatchPlaces(t, pod, resp.Patch, tc.objects)
				if na := after.Spec.Affinity.NodeAffinity; len(na.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
					after.Annotations[v1beta1.AnnotationPreferredAffinitySource] != "" {
					t.Errorf("preferences applied at admission to a locally gated pod: %v, %v", na.PreferredDuringSchedulingIgnoredDuringExecution, after.Annotations)
				}
			}
		})
	}
}
