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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// PodPlacementConfigBuilder builds a test PodPlacementConfig.
type PodPlacementConfigBuilder struct{ c *v1beta1.PodPlacementConfig }

// PodPlacementConfig starts a PodPlacementConfig with only a namespace and a name: priority
// 0, no label selector (every pod of the namespace), no plugins.
func PodPlacementConfig(namespace, name string) *PodPlacementConfigBuilder {
	return &PodPlacementConfigBuilder{c: &v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

// WithGeneration sets the generation the API server would have counted.
func (b *PodPlacementConfigBuilder) WithGeneration(g int64) *PodPlacementConfigBuilder {
	b.c.Generation = g
	return b
}

// WithPriority sets the config's priority.
func (b *PodPlacementConfigBuilder) WithPriority(p int32) *PodPlacementConfigBuilder {
	b.c.Spec.Priority = p
	return b
}

// WithLabelSelector sets which pods of the namespace the config selects.
func (b *PodPlacementConfigBuilder) WithLabelSelector(s *metav1.LabelSelector) *PodPlacementConfigBuilder {
	b.c.Spec.LabelSelector = s
	return b
}

// WithPlugins sets the config's plugins as given (nil: none).
func (b *PodPlacementConfigBuilder) WithPlugins(p *v1beta1.Plugins) *PodPlacementConfigBuilder {
	b.c.Spec.Plugins = p
	return b
}

// WithPlatforms enables nodeAffinityScoring with the given weighted architectures (none:
// enabled with an empty list).
func (b *PodPlacementConfigBuilder) WithPlatforms(terms ...v1beta1.NodeAffinityScoringPlatformTerm) *PodPlacementConfigBuilder {
	return b.WithPlugins(&v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{Enabled: true, Platforms: terms}})
}

// Build returns a copy of the PodPlacementConfig built so far.
func (b *PodPlacementConfigBuilder) Build() *v1beta1.PodPlacementConfig { return b.c.DeepCopy() }

// Platform is a nodeAffinityScoring term preferring arch with weight.
func Platform(arch string, weight int32) v1beta1.NodeAffinityScoringPlatformTerm {
	return v1beta1.NodeAffinityScoringPlatformTerm{Architecture: arch, Weight: weight}
}
