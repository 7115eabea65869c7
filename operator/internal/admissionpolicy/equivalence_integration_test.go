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
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/knownimages"
	"github.com/archgate/archgate/operator/internal/webhook"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// published are the images the controller has published; unpublished are images it has not.
var (
	published = []inspect.KnownImage{
		{Ref: "docker.io/library/nginx:latest", Architectures: []string{"amd64", "arm64", "ppc64le", "s390x"}},
		{Ref: "docker.io/library/busybox:1.36", Architectures: []string{"arm64", "amd64"}},
		{Ref: "quay.io/team/app:v1", Architectures: []string{"amd64"}},
		{Ref: "registry.example:5000/ml/model:latest", Architectures: []string{"arm64"}},
		{Ref: "docker.io/team/bundle:v1", AnyArchitecture: true},
		{Ref: "quay.io/team/tool@" + digest, Architectures: []string{"arm64", "s390x"}},
		{Ref: "quay.io/team/s390x-only:v2", Architectures: []string{"s390x"}},
	}
	unpublished = []string{"quay.io/team/unknown:v1", "nginx:1.27", "docker.io/library/nginx:latest@" + digest}
)

// clusters are the ClusterPodPlacementConfigs the equivalence is checked under.
var clusters = map[string]v1beta1.ClusterPodPlacementConfigSpec{
	"defaults": {},
	"cluster weights": {Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
		Enabled: true,
		Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{
			{Architecture: "arm64", Weight: 75}, {Architecture: "amd64", Weight: 25}, {Architecture: "s390x", Weight: 5},
		},
	}}},
	"architecture taints": {ArchitectureTaints: []v1beta1.ArchitectureTaint{
		{Architecture: "arm64"}, {Architecture: "s390x", Key: "example.com/mainframe", Value: "yes", Effect: corev1.TaintEffectNoExecute},
	}},
	// The policy leaves the pods a rule matches to the webhook; the others it places as
	// without rules. Weights of their own, so that the probe tells this policy from the others.
	// The rules never fail here (installPolicy makes a failing expression refuse the pod):
	// TestPolicyLeavesRuleMatchesToTheWebhook covers failures.
	"placement rules": {
		Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled:   true,
			Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 70}, {Architecture: "ppc64le", Weight: 10}},
		}},
		PlacementRules: []v1beta1.PlacementRule{
			{Name: "web-not-power", Expression: "object.metadata.?labels.?app.orValue('') == 'web' // web pods",
				RequiredArchitectures: []string{"amd64", "arm64", "s390x"}},
			{Name: "team-a-amd", Expression: "object.metadata.?annotations.?team.orValue('') == 'a'",
				PreferredArchitectures: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "amd64", Weight: 60}}},
			{Name: "ssd-arm", Expression: "object.spec.?nodeSelector.?disk.orValue('') == 'ssd'", RequiredArchitectures: []string{"arm64"}},
		},
	},
}

// TestPolicyMatchesWebhook admits generated pods as a cluster with the policy does (the policy in
// the real apiserver, then the webhook's handler for the pods it did not label) and through the
// webhook's handler alone (placement.Decide), with the same published images and configuration,
// and requires the same labels, annotations, node affinity and scheduling gates.
func TestPolicyMatchesWebhook(t *testing.T) {
	const podsPerCluster = 400
	ensureNamespace(t, "team")
	params := knownimages.ImageParameters(published)
	data, _, err := knownimages.Encode(published, knownimages.MaxDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	index, err := knownimages.Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range clusters {
		t.Run(name, func(t *testing.T) {
			cluster := applyCluster(t, spec)
			oracle := webhook.NewSchedulingGate(nil, webhook.Options{
				OperatorNamespace: "archgate-system", Known: index, Configs: k8s,
			})
			// The probe runs an image of every architecture: each configuration places it
			// differently (weights, tolerations), so the wait ends only once the apiserver
			// applies this subtest's policy, not the previous one's.
			probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "probe"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: published[0].Ref}}}}
			installPolicy(t, cluster, params, probe, func(admitted *corev1.Pod) bool {
				return placementOf(admitted) == placementOf(viaWebhook(t, oracle, probe))
			})
			seed := uint64(time.Now().UnixNano())
			rng := rand.New(rand.NewPCG(seed, 1))
			placed := 0
			for i := range podsPerCluster {
				pod := newPod(rng, fmt.Sprintf("pod-%d", i))
				want := viaWebhook(t, oracle, pod)
				got := admit(t, pod)
				_, labelled := got.Labels[v1beta1.LabelSchedulingGate]
				if handled := got.Labels[v1beta1.LabelAdmissionPolicy] == v1beta1.LabelValueTrue; handled != labelled {
					t.Fatalf("seed %d: pod %s: labels %v; the policy's label must be on exactly the pods it placed or gated",
						seed, pod.Name, got.Labels)
				}
				if !labelled {
					// The cluster calls the webhook for the pods the policy left alone.
					got = viaWebhook(t, oracle, got)
				}
				if w, g := placementOf(want), placementOf(got); w != g {
					t.Fatalf("seed %d: pod %s placed differently by the policy and the webhook\npod:\n%s\nwebhook:\n%s\npolicy:\n%s",
						seed, pod.Name, toYAML(pod), w, g)
				}
				if got.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission {
					placed++
				}
			}
			t.Logf("seed %d: %d pods, %d placed at admission, the others gated or exempt", seed, podsPerCluster, placed)
			if placed == 0 {
				t.Fatal("no generated pod was placed at admission: the generator does not exercise the placement")
			}
		})
	}
}

// applyCluster writes the ClusterPodPlacementConfig the webhook reads and returns it.
func applyCluster(t testing.TB, spec v1beta1.ClusterPodPlacementConfigSpec) *v1beta1.ClusterPodPlacementConfig {
	t.Helper()
	cluster := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	_ = k8s.Delete(t.Context(), cluster)
	cluster.Spec = spec
	if err := k8s.Create(t.Context(), cluster); err != nil {
		t.Fatalf("creating the ClusterPodPlacementConfig: %v", err)
	}
	return cluster
}

// viaWebhook returns pod as the webhook's handler would admit it.
func viaWebhook(t *testing.T, h *webhook.SchedulingGate, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	resp := h.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "uid", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: pod.Namespace, Name: pod.Name, Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: raw},
	}})
	if !resp.Allowed {
		t.Fatalf("the webhook denied pod %s: %v", pod.Name, resp.Result)
	}
	if len(resp.Patches) == 0 {
		return pod.DeepCopy()
	}
	ops, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("applying the webhook's patch to pod %s: %v", pod.Name, err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(patched, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// placement is what either path decided about a pod.
type placement struct {
	Labels          map[string]string          `json:"labels,omitempty"`
	Annotations     map[string]string          `json:"annotations,omitempty"`
	Affinity        *corev1.Affinity           `json:"affinity,omitempty"`
	SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates,omitempty"`
	Tolerations     []corev1.Toleration        `json:"tolerations,omitempty"`
}

// placementOf returns the YAML of what was decided, with empty and nil lists and maps alike
// (the apiserver returns some absent lists as empty ones). The tolerations the apiserver's
// DefaultTolerationSeconds admission adds before the policy runs are left out: the webhook's
// oracle admits the pod as written.
func placementOf(pod *corev1.Pod) string {
	defaulted := func(t corev1.Toleration) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
	}
	tolerations := slices.DeleteFunc(slices.Clone(pod.Spec.Tolerations), defaulted)
	// Each path records where it added the placement, under a key of its own: the records must
	// name the same paths (the policy's also names the images, after a semicolon), the
	// tolerations counted without the defaulted ones.
	annotations := maps.Clone(pod.Annotations)
	// The policy's label says which path placed the pod, as the record's key does.
	labels := maps.Clone(pod.Labels)
	delete(labels, v1beta1.LabelAdmissionPolicy)
	if record, ok := annotations[v1beta1.AnnotationAdmissionPolicyPlacement]; ok {
		delete(annotations, v1beta1.AnnotationAdmissionPolicyPlacement)
		annotations[v1beta1.AnnotationAdmissionPlacement], _, _ = strings.Cut(record, ";")
	}
	if record, ok := annotations[v1beta1.AnnotationAdmissionPlacement]; ok && record != "" {
		paths := strings.Split(record, ",")
		for i, p := range paths {
			if n, err := strconv.Atoi(strings.TrimPrefix(p, "/spec/tolerations/")); err == nil {
				before := 0
				for _, t := range pod.Spec.Tolerations[:min(n, len(pod.Spec.Tolerations))] {
					if defaulted(t) {
						before++
					}
				}
				paths[i] = "/spec/tolerations/" + strconv.Itoa(n-before)
			}
		}
		annotations[v1beta1.AnnotationAdmissionPlacement] = strings.Join(paths, ",")
	}
	p := placement{Labels: labels, Annotations: annotations, Affinity: pod.Spec.Affinity, SchedulingGates: pod.Spec.SchedulingGates,
		Tolerations: tolerations}
	var canonical placement
	raw, _ := json.Marshal(p)
	_ = json.Unmarshal(raw, &canonical)
	if equality.Semantic.DeepEqual(canonical.Affinity, &corev1.Affinity{}) {
		canonical.Affinity = nil
	}
	return toYAML(pruneEmpty(canonical))
}

// pruneEmpty drops the empty lists of the node affinity, which the two paths may spell apart.
func pruneEmpty(p placement) placement {
	if p.Affinity == nil || p.Affinity.NodeAffinity == nil {
		return p
	}
	na := p.Affinity.NodeAffinity
	if len(na.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		na.PreferredDuringSchedulingIgnoredDuringExecution = nil
	}
	if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for i := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			term := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
			if len(term.MatchExpressions) == 0 {
				term.MatchExpressions = nil
			}
			if len(term.MatchFields) == 0 {
				term.MatchFields = nil
			}
		}
	}
	return p
}

func toYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// newPod returns a random pod of namespace team: containers and init containers naming
// published images in any of their written forms and
// unpublished ones, and the user constraints placement must respect.
func newPod(rng *rand.Rand, name string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}
	for i := range 1 + rng.IntN(3) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: randomImage(rng)})
	}
	for i := range rng.IntN(3) / 2 * (1 + rng.IntN(2)) {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("init%d", i), Image: randomImage(rng)})
	}
	if rng.IntN(3) == 0 {
		pod.Labels = map[string]string{"app": "web"}
	}
	if rng.IntN(3) == 0 {
		pod.Annotations = map[string]string{"team": "a"}
	}
	if rng.IntN(8) == 0 {
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	}
	if rng.IntN(6) == 0 {
		pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}}
	}
	if rng.IntN(6) == 0 {
		pod.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	}
	pod.Spec.Affinity = randomAffinity(rng)
	pod.Spec.Tolerations = randomTolerations(rng)
	if rng.IntN(8) == 0 {
		pod.Labels = map[string]string{v1beta1.LabelPreferredArchitecture: []string{"arm64", "s390x", "amd64"}[rng.IntN(3)]}
	}
	switch rng.IntN(24) {
	case 0: // the API refuses a pod with both a node name and scheduling gates
		pod.Spec.NodeName, pod.Spec.SchedulingGates = "node-1", nil
	case 1:
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid"}}
	case 2:
		pod.Spec.NodeSelector = map[string]string{v1beta1.NodeArchLabel: "arm64"}
	case 3: // a copy of a gated pod, without the label
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1beta1.SchedulingGateName})
	case 4: // more images than maxImagesPerPod
		for i := range v1beta1.DefaultMaxImagesPerPod {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("many%d", i), Image: fmt.Sprintf("quay.io/team/many-%d:v1", i)})
		}
	}
	return pod
}

func randomImage(rng *rand.Rand) string {
	if rng.IntN(6) == 0 {
		return unpublished[rng.IntN(len(unpublished))]
	}
	forms := inspect.WrittenForms(published[rng.IntN(len(published))].Ref)
	return forms[rng.IntN(len(forms))]
}

// randomAffinity returns no affinity, or one with required terms (constraining the
// architecture or not, with match fields only) and preferred terms (weighting the architecture
// or not).
func randomAffinity(rng *rand.Rand) *corev1.Affinity {
	arch := func(values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	other := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	exists := corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpExists}
	notS390x := corev1.NodeSelectorRequirement{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"s390x"}}
	archExists := corev1.NodeSelectorRequirement{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpExists}
	field := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n1"}}
	expressions := func(rs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: rs}
	}
	// The shapes of the required and preferred merge tables (internal/placement): terms with
	// and without the architecture (any operator), match fields only, several terms.
	terms := [][]corev1.NodeSelectorTerm{
		nil,
		{expressions(other)},
		{expressions(other, exists)},
		{expressions(arch("amd64", "arm64"))},
		{expressions(notS390x)},
		{expressions(arch("s390x")), expressions(other)},
		{expressions(other), expressions(exists)},
		{{MatchFields: []corev1.NodeSelectorRequirement{field}}},
		{{MatchExpressions: []corev1.NodeSelectorRequirement{other}, MatchFields: []corev1.NodeSelectorRequirement{field}}, expressions(arch("arm64"))},
	}
	preferred := [][]corev1.PreferredSchedulingTerm{
		nil,
		{{Weight: 10, Preference: expressions(arch("arm64"))}},
		{{Weight: 5, Preference: expressions(other)}},
		{{Weight: 5, Preference: expressions(other)}, {Weight: 1, Preference: expressions(archExists)}},
	}
	switch rng.IntN(7) {
	case 0:
		return nil
	case 1: // present but empty, at either level
		return &corev1.Affinity{}
	case 2:
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	case 3:
		return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		}}}}
	}
	na := &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred[rng.IntN(len(preferred))]}
	if t := terms[rng.IntN(len(terms))]; t != nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: t}
	}
	return &corev1.Affinity{NodeAffinity: na}
}

// randomTolerations returns no tolerations, or some that tolerate the architecture taints of the
// "architecture taints" configuration in each way a toleration can (exactly, by Exists on the
// key, by an empty key, by an empty effect) or almost (another effect, another value).
func randomTolerations(rng *rand.Rand) []corev1.Toleration {
	shapes := [][]corev1.Toleration{
		nil,
		{{Key: "gpu", Operator: corev1.TolerationOpExists}},
		{{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectNoSchedule}},
		{{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpExists}},
		{{Operator: corev1.TolerationOpExists}},
		{{Key: v1beta1.NodeArchLabel, Value: "arm64"}},
		{{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectPreferNoSchedule}},
		{{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpEqual, Value: "amd64", Effect: corev1.TaintEffectNoSchedule}},
		{{Key: "example.com/mainframe", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
	}
	if rng.IntN(2) == 0 {
		return nil
	}
	return slices.Clone(shapes[rng.IntN(len(shapes))])
}
