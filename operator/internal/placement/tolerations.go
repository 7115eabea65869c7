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

package placement

import (
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// AddArchitectureTolerations appends to spec.tolerations the toleration of each architecture
// taint (ClusterPodPlacementConfig spec.architectureTaints) whose architecture is in archs and
// that no toleration of the pod tolerates yet, and returns the tolerations added. The pod's own
// tolerations are kept as they are, in order; a taint the pod already tolerates (by its exact
// toleration, an Exists on the key, or an empty key that tolerates everything) adds nothing.
// spec.Tolerations is replaced by a new slice when something is added, so memory reachable from
// the old spec is never written.
func AddArchitectureTolerations(spec *corev1.PodSpec, archs sets.Set[string], taints []v1beta1.ArchitectureTaint) []corev1.Toleration {
	var added []corev1.Toleration
	tolerations := spec.Tolerations
	for _, t := range taints {
		if !archs.Has(t.Architecture) {
			continue
		}
		taint := t.Taint()
		if Tolerates(tolerations, taint) {
			continue
		}
		if added == nil {
			tolerations = slices.Clone(tolerations)
		}
		added = append(added, t.Toleration())
		tolerations = append(tolerations, t.Toleration())
	}
	if added != nil {
		spec.Tolerations = tolerations
	}
	return added
}

// Tolerates reports whether one of tolerations tolerates taint, as the scheduler decides it
// (numeric comparison operators, a feature gate, count as not tolerating).
func Tolerates(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	return slices.ContainsFunc(tolerations, func(t corev1.Toleration) bool {
		return t.ToleratesTaint(logr.Discard(), &taint, false)
	})
}
