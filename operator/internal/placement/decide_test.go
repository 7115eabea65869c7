package placement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
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
