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
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/internal/inspect"
)

// AnnotationValueAnyArchitecture is the value of the architectures annotation for a pod whose
// images all run on any architecture (they carry no binaries).
const AnnotationValueAnyArchitecture = "*"

// PodImages returns the unique image references of the pod's containers and init containers,
// sorted, without empty ones. Ephemeral containers are left out: they cannot exist when a pod is
// created (they are added later through the ephemeralcontainers subresource) and do not take
// part in scheduling.
func PodImages(spec *corev1.PodSpec) []string {
	images := sets.New[string]()
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			if img := ContainerImage(c); img != "" {
				images.Insert(img)
			}
		}
	}
	return sets.List(images)
}

// ContainerImage is the image reference of c as the controller inspects it (surrounding white
// space trimmed, as the kubelet does); "" when the container names no image.
func ContainerImage(c corev1.Container) string { return strings.TrimSpace(c.Image) }

// ImageResult is the successful inspection of one image of a pod.
type ImageResult struct {
	Image  string
	Result inspect.Result
}

// Intersect returns the architectures every image supports (the one home of that rule: `archgate
// explain` calls it too). Images without binaries
// (Result.AnyArchitecture) run anywhere and do not narrow the set; anyArch reports that every image
// is such an image (or that there are none), in which case archs is nil. An empty, non-nil
// archs means the images share no architecture.
func Intersect(results []ImageResult) (archs sets.Set[string], anyArch bool) {
	for _, r := range results {
		if r.Result.AnyArchitecture {
			continue
		}
		s := sets.New(r.Result.Architectures...)
		if archs == nil {
			archs = s
		} else {
			archs = archs.Intersection(s)
		}
	}
	return archs, archs == nil
}

// architecturesAnnotation is the value of the architectures annotation: the sorted set joined
// by commas, AnnotationValueAnyArchitecture when every image runs anywhere, "" when the images
// share no architecture.
func architecturesAnnotation(archs sets.Set[string], anyArch bool) string {
	if anyArch {
		return AnnotationValueAnyArchitecture
	}
	return strings.Join(sets.List(archs), ",")
}

// describeArchitectures lists each image with its architectures, for the no-common-architecture
// Event: "a:1 [amd64], b:2 [arm64 s390x]".
func describeArchitectures(results []ImageResult) string {
	parts := make([]string, 0, len(results))
	for _, r := range results {
		archs := "any"
		if !r.Result.AnyArchitecture {
			archs = strings.Join(slices.Sorted(slices.Values(r.Result.Architectures)), " ")
			if archs == "" {
				archs = "none"
			}
		}
		parts = append(parts, r.Image+" ["+archs+"]")
	}
	return strings.Join(parts, ", ")
}
