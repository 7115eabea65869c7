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
	"cmp"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// SelectConfigs returns the PodPlacementConfigs that apply to pod, highest priority first (equal
// priorities by name, so the order is deterministic): those in the pod's namespace whose
// labelSelector matches the pod's labels. An unset or empty labelSelector matches every pod of the
// namespace. A configuration with an invalid selector is left out, and the returned error (joined,
// one per such configuration) says which; the other matches are still returned.
// The returned pointers point into configs.
func SelectConfigs(pod *corev1.Pod, configs []v1beta1.PodPlacementConfig) ([]*v1beta1.PodPlacementConfig, error) {
	var selected []*v1beta1.PodPlacementConfig
	var errs []error
	podLabels := labels.Set(pod.Labels)
	for i := range configs {
		c := &configs[i]
		if c.Namespace != pod.Namespace {
			continue
		}
		selector := labels.Everything()
		if c.Spec.LabelSelector != nil {
			var err error
			if selector, err = metav1.LabelSelectorAsSelector(c.Spec.LabelSelector); err != nil {
				errs = append(errs, fmt.Errorf("PodPlacementConfig %s/%s: invalid labelSelector: %w", c.Namespace, c.Name, err))
				continue
			}
		}
		if selector.Matches(podLabels) {
			selected = append(selected, c)
		}
	}
	slices.SortStableFunc(selected, func(a, b *v1beta1.PodPlacementConfig) int {
		return cmp.Or(cmp.Compare(b.Spec.Priority, a.Spec.Priority), cmp.Compare(a.Name, b.Name))
	})
	return selected, errors.Join(errs...)
}

// ScoringSources returns, in the order MergePreferredArchitectures must apply them, the
// preferences for pod: its preferred-architecture label (LabelSource), the enabled
// nodeAffinityScoring of the matching PodPlacementConfigs by descending priority (see
// SelectConfigs), then the cluster's: the first of rules (the placement rules that matched the
// pod) with preferredArchitectures (RuleSource), and the ClusterPodPlacementConfig's enabled
// nodeAffinityScoring. The rules are the cluster's, so their preference is left out with the
// cluster (nil: none, or ClusterStage found that the cluster's preferences do not apply).
// Configurations whose plugin is unset or disabled are left out. The error is SelectConfigs's.
func ScoringSources(pod *corev1.Pod, configs []v1beta1.PodPlacementConfig, rules []v1beta1.PlacementRule,
	cluster *v1beta1.ClusterPodPlacementConfig) ([]ScoringSource, error) {
	selected, err := SelectConfigs(pod, configs)
	var sources []ScoringSource
	if src, ok := LabelSource(pod); ok {
		sources = append(sources, src)
	}
	for _, c := range selected {
		if c.Spec.Plugins.NodeAffinityScoringEnabled() {
			sources = append(sources, ScoringSource{
				Ref:       SourceRef{Kind: KindPodPlacementConfig, Namespace: c.Namespace, Name: c.Name},
				Platforms: c.Spec.Plugins.NodeAffinityScoring.Platforms,
			})
		}
	}
	if cluster == nil {
		return sources, err
	}
	if src, ok := RuleSource(rules); ok {
		sources = append(sources, src)
	}
	if cluster.Spec.Plugins.NodeAffinityScoringEnabled() {
		sources = append(sources, ScoringSource{
			Ref:       SourceRef{Kind: KindClusterPodPlacementConfig, Name: cluster.Name},
			Platforms: cluster.Spec.Plugins.NodeAffinityScoring.Platforms,
		})
	}
	return sources, err
}

// RuleSource returns the preference of the first rule with preferredArchitectures, named by the
// rule: only that rule's weights can apply, as a whole (a rule's weights mean something
// together, as a configuration's do).
func RuleSource(rules []v1beta1.PlacementRule) (ScoringSource, bool) {
	for _, r := range rules {
		if len(r.PreferredArchitectures) > 0 {
			return ScoringSource{Ref: SourceRef{Kind: KindPlacementRule, Name: r.Name}, Platforms: r.PreferredArchitectures}, true
		}
	}
	return ScoringSource{}, false
}

// LabelSource returns the preference the pod's owner asked for with the preferred-architecture
// label: one term of weight v1beta1.PreferredArchitectureWeight. It is applied only when every
// image of the pod supports the architecture (MergePreferredArchitectures skips it otherwise, as
// it skips any weight on an architecture the pod cannot run on), so a tenant's label can only
// move its own pod among the nodes that can run it.
func LabelSource(pod *corev1.Pod) (ScoringSource, bool) {
	arch, ok := pod.Labels[v1beta1.LabelPreferredArchitecture]
	if !ok {
		return ScoringSource{}, false
	}
	return ScoringSource{
		Ref:       SourceRef{Kind: KindPodLabel, Name: v1beta1.LabelPreferredArchitecture},
		Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: arch, Weight: v1beta1.PreferredArchitectureWeight}},
	}, true
}
