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

package objects

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// ArchIn is the node selector requirement kubernetes.io/arch In archs.
func ArchIn(archs ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: archs}
}

// RequiredAffinity is an affinity whose only content is required node affinity, one term of
// match expressions per entry of terms.
func RequiredAffinity(terms ...[]corev1.NodeSelectorRequirement) *corev1.Affinity {
	sel := &corev1.NodeSelector{}
	for _, t := range terms {
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
}
