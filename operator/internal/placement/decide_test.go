package placement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestPodImages(t *testing.T) {
	tests := map[string]struct {
		spec corev1.PodSpec
		want []string
	}{
		"one container": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "app:1"}}},
			want: []string{"app:1"},
		},
		"init and regular containers, duplicates once, sorted": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Image: "setup:2"}, {Image: "app:1"}},
				Containers:     []corev1.Container{{Image: "app:1"}, {Image: "sidecar@sha256:" + strings.Repeat("a", 64)}, {Image: "app:1"}},
			},
			want: []string{"app:1", "setup:2", "sidecar@sha256:" + strings.Repeat("a", 64)},
		},
		"ephemeral containers are left out": {
			spec: corev1.PodSpec{
				Containers:          []corev1.Container{{Image: "app:1"}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Image: "debug:1"}}},
			},
			want: []string{"app:1"},
		},
		"empty and blank images are skipped": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Image: ""}, {Image: "  "}, {Image: "app:1"}}},
			want: []string{"app:1"},
		},
		"no containers": {spec: corev1.PodSpec{}, want: []string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PodImages(&tc.spec)); diff != "" {
				t.Errorf("PodImages (-want +got):\n%s", diff)
			}
		})
	}
}

func archsResult(archs ...string) ImageArchitectures { return ImageArchitectures{Architectures: archs} }

func TestIntersect(t *testing.T) {
	anyArch := ImageArchitectures{AnyArchitecture: true, Architectures: []string{}}
	tests := map[string]struct {
		images         []ImageArchitectures
		wantArchs      []string // nil: no set
		wantAny        bool
		wantAnnotation string
	}{
		"one multi-arch image": {
			images:         []ImageArchitectures{archsResult("arm64", "amd64")},
			wantArchs:      []string{"amd64", "arm64"},
			wantAnnotation: "amd64,arm64",
		},
		"intersection of several": {
			images: []ImageArchitectures{
				archsResult("amd64", "arm64", "ppc64le", "s390x"),
				archsResult("amd64", "arm64"),
				archsResult("arm64", "s390x"),
			},
			wantArchs:      []string{"arm64"},
			wantAnnotation: "arm64",
		},
		"no common architecture": {
			images:         []ImageArchitectures{archsResult("amd64"), archsResult("arm64")},
			wantArchs:      []string{},
			wantAnnotation: "",
		},
		"an image with no linux architecture": {
			images:         []ImageArchitectures{archsResult("amd64"), archsResult()},
			wantArchs:      []string{},
			wantAnnotation: "",
		},
		"images without binaries are neutral": {
			images:         []ImageArchitectures{anyArch, archsResult("s390x", "amd64")},
			wantArchs:      []string{"amd64", "s390x"},
			wantAnnotation: "amd64,s390x",
		},
		"only images without binaries": {
			images:         []ImageArchitectures{anyArch, anyArch},
			wantAny:        true,
			wantAnnotation: AnnotationValueAnyArchitecture,
		},
		"nothing inspected": {wantAny: true, wantAnnotation: AnnotationValueAnyArchitecture},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			archs, anyArch := Intersect(tc.images)
			if anyArch != tc.wantAny {
				t.Errorf("any = %t, want %t", anyArch, tc.wantAny)
			}
			switch {
			case tc.wantArchs == nil && archs != nil:
				t.Errorf("archs = %v, want nil", sets.List(archs))
			case tc.wantArchs != nil && archs == nil:
				t.Errorf("archs = nil, want %v", tc.wantArchs)
			case tc.wantArchs != nil:
				if diff := cmp.Diff(tc.wantArchs, sets.List(archs)); diff != "" {
					t.Errorf("archs (-want +got):\n%s", diff)
				}
			}
			if got := ArchitecturesAnnotation(archs, anyArch); got != tc.wantAnnotation {
				t.Errorf("annotation = %q, want %q", got, tc.wantAnnotation)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	cluster := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 40}},
		}}},
	}
	badSelector := v1beta1.PodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "team"},
		Spec: v1beta1.PodPlacementConfigSpec{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}},
		}},
	}
	pinned := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		}}},
	}}}
	tests := map[string]struct {
		images          []ImageArchitectures
		affinity        *corev1.Affinity
		configs         []v1beta1.PodPlacementConfig
		wantOutcome     Outcome
		wantAnnotation  string
		wantNoCommon    bool
		wantPreferred   bool
		wantSelectorErr bool
	}{
		"common architectures and the cluster's preference": {
			images: []ImageArchitectures{archsResult("amd64", "arm64")}, wantOutcome: OutcomeArchSet,
			wantAnnotation: "amd64,arm64", wantPreferred: true,
		},
		"images without binaries under a user's pin": {
			images: []ImageArchitectures{{AnyArchitecture: true}}, affinity: pinned, wantOutcome: OutcomeUserPinned,
			wantAnnotation: AnnotationValueAnyArchitecture, wantPreferred: true,
		},
		"no common architecture: no preference": {
			images:      []ImageArchitectures{archsResult("amd64"), archsResult("s390x")},
			wantOutcome: OutcomeNoCommonArch, wantNoCommon: true,
		},
		"an invalid selector is reported, the cluster's preference still applies": {
			images: []ImageArchitectures{archsResult("arm64")}, configs: []v1beta1.PodPlacementConfig{badSelector},
			wantOutcome: OutcomeArchSet, wantAnnotation: "arm64", wantPreferred: true, wantSelectorErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Affinity: tc.affinity.DeepCopy()}}
			d := Decide(pod, tc.images, tc.configs, cluster, Constraints{})
			if d.Outcome != tc.wantOutcome || d.Architectures != tc.wantAnnotation || d.NoCommonArchitecture != tc.wantNoCommon {
				t.Errorf("Decide = %+v, want outcome %q, annotation %q, no common %t", d, tc.wantOutcome, tc.wantAnnotation, tc.wantNoCommon)
			}
			if got := PodPrefersArchitecture(&pod.Spec); got != tc.wantPreferred {
				t.Errorf("preferred arch terms = %t, want %t", got, tc.wantPreferred)
			}
			if (d.SelectorErr != nil) != tc.wantSelectorErr {
				t.Errorf("selector error = %v, want one: %t", d.SelectorErr, tc.wantSelectorErr)
			}
		})
	}
}
