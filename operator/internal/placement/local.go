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
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Local placement (ClusterPodPlacementConfig spec.localPlacement) splits a pod's placement in two
// stages, each with its own gate and its own single write: the namespace's local controller
// applies the PodPlacementConfigs' preferences (DecideLocal), then the cluster-wide controller —
// or the webhook at admission — applies the required affinity and, when no PodPlacementConfig
// did, the cluster-level preferences (ClusterStage).

// DecideLocal merges into pod's preferred node affinity the weights of the first applicable
// PodPlacementConfig of its namespace (highest priority first, see SelectConfigs). The local
// controller inspects no image (it holds no pull secret): the weights are limited to the
// architectures the webhook recorded at admission (the architectures annotation), or to every
// supported architecture when there is none; the cluster-wide controller then restricts the
// required affinity to what the images support, so a weight on an architecture an image lacks
// is dead, never harmful. Outcome is left empty.
func DecideLocal(pod *corev1.Pod, configs []v1beta1.PodPlacementConfig) Decision {
	d := Decision{}
	sources, err := ScoringSources(pod, configs, nil, nil)
	d.SelectorErr = err
	if len(sources) == 0 {
		return d
	}
	d.Preferred = MergePreferredArchitectures(&pod.Spec, localCompatible(pod), sources)
	if len(d.Preferred.Applied) > 0 {
		d.PreferenceSource = d.Preferred.Applied[0].Source.String()
	}
	return d
}

// localCompatible is the set of architectures DecideLocal may weight.
func localCompatible(pod *corev1.Pod) sets.Set[string] {
	switch a := pod.Annotations[v1beta1.AnnotationArchitectures]; a {
	case "", AnnotationValueAnyArchitecture:
		return sets.New(v1beta1.SupportedArchitectures()...)
	default:
		return sets.New(splitArchitectures(a)...)
	}
}

// ClusterStage returns the configurations the cluster-wide stage (the controller removing the
// scheduling gate, or the webhook placing a pod at admission) must still apply to pod, given
// what the local stage did or will do:
//
//   - the pod carries the local gate: the local controller will apply the PodPlacementConfigs,
//     so none is returned; when the cluster-level preferences are enabled (nodeAffinityScoring,
//     or a placement rule with preferredArchitectures), wait is true: they may apply only if no
//     PodPlacementConfig does, which is known once the local gate is gone (the webhook then
//     gates the pod instead of placing it at admission);
//   - the local controller removed its gate (LabelLocalSchedulingGate=removed): the
//     PodPlacementConfigs were applied, so none is returned, and the cluster is returned only if
//     none of them added weights (no preferred-affinity-source annotation);
//   - otherwise (no local placement, or the operator released the local gate unprocessed):
//     configs and cluster unchanged, as without local placement.
func ClusterStage(pod *corev1.Pod, configs []v1beta1.PodPlacementConfig, cluster *v1beta1.ClusterPodPlacementConfig) (
	[]v1beta1.PodPlacementConfig, *v1beta1.ClusterPodPlacementConfig, bool) {
	switch {
	case v1beta1.HasLocalSchedulingGate(&pod.Spec):
		if clusterPreferences(cluster) {
			return nil, nil, true
		}
		return nil, nil, false
	case pod.Labels[v1beta1.LabelLocalSchedulingGate] == v1beta1.LabelValueRemoved:
		if pod.Annotations[v1beta1.AnnotationPreferredAffinitySource] != "" {
			return nil, nil, false
		}
		return nil, cluster, false
	}
	return configs, cluster, false
}

// clusterPreferences reports whether cluster may add preferred weights: its nodeAffinityScoring
// is enabled, or one of its placement rules has preferredArchitectures (which rule matches is
// not known here).
func clusterPreferences(cluster *v1beta1.ClusterPodPlacementConfig) bool {
	if cluster == nil {
		return false
	}
	return cluster.Spec.Plugins.NodeAffinityScoringEnabled() ||
		slices.ContainsFunc(cluster.Spec.PlacementRules, func(r v1beta1.PlacementRule) bool { return len(r.PreferredArchitectures) > 0 })
}

// splitArchitectures parses the architectures annotation (ArchitecturesAnnotation's format).
func splitArchitectures(annotation string) []string {
	return strings.Split(annotation, ",")
}
