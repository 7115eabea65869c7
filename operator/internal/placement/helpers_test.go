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
	corev1 "k8s.io/api/core/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

const zoneLabel = "topology.kubernetes.io/zone"

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func archIn(values ...string) corev1.NodeSelectorRequirement {
	return expr(v1beta1.NodeArchLabel, corev1.NodeSelectorOpIn, values...)
}

func zoneIn(values ...string) corev1.NodeSelectorRequirement {
	return expr(zoneLabel, corev1.NodeSelectorOpIn, values...)
}

func term(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: exprs}
}

// requiredAffinity returns an affinity whose only content is the given required terms.
func requiredAffinity(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

func preferred(weight int32, exprs ...corev1.NodeSelectorRequirement) corev1.PreferredSchedulingTerm {
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: term(exprs...)}
}

func platforms(archWeights ...any) []v1beta1.NodeAffinityScoringPlatformTerm {
	var out []v1beta1.NodeAffinityScoringPlatformTerm
	for i := 0; i+1 < len(archWeights); i += 2 {
		out = append(out, v1beta1.NodeAffinityScoringPlatformTerm{
			Architecture: archWeights[i].(string),
			Weight:       int32(archWeights[i+1].(int)),
		})
	}
	return out
}

func scoring(enabled bool, p []v1beta1.NodeAffinityScoringPlatformTerm) *v1beta1.Plugins {
	return &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{Enabled: enabled, Platforms: p}}
}
