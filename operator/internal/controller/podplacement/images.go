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

	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/placement"
)

// ImageResult is the successful inspection of one image of a pod.
type ImageResult struct {
	Image  string
	Result inspect.Result
}

// architectures returns what placement needs of the results.
func architectures(results []ImageResult) []placement.ImageArchitectures {
	out := make([]placement.ImageArchitectures, len(results))
	for i, r := range results {
		out[i] = r.Result.Placement()
	}
	return out
}

// describeArchitectures lists each image with its architectures, for the no-common-architecture
// Event: "a:1 [amd64], b:2 [arm64 s390x]". An image with no Linux architecture is listed with
// its platforms ("c:1 [windows/amd64]"), so that the Event says what it runs on.
func describeArchitectures(results []ImageResult) string {
	parts := make([]string, 0, len(results))
	for _, r := range results {
		archs := "any"
		if !r.Result.AnyArchitecture {
			archs = strings.Join(slices.Sorted(slices.Values(r.Result.Architectures)), " ")
			if archs == "" {
				archs = strings.Join(r.Result.Platforms, " ")
			}
			if archs == "" {
				archs = "none"
			}
		}
		parts = append(parts, r.Image+" ["+archs+"]")
	}
	return strings.Join(parts, ", ")
}

// describeAnnotation is the architectures annotation's value for a person: "any" when the
// images run on any architecture.
func describeAnnotation(archs string) string {
	if archs == placement.AnnotationValueAnyArchitecture {
		return "any"
	}
	return archs
}
