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

// Package affinity exposes archgate's placement rules to programs outside the operator that must
// write what archgate writes: the simulator's handwritten pass gives each pod, by hand, the
// affinity archgate would give it, so that comparing the two measures archgate's own cost. The
// rules are the operator's own (internal/placement), not a copy.
package affinity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
)

// AddPreferences adds to pod the preferred node affinity terms archgate adds to a pod whose
// images all support the architectures compatible, under the ClusterPodPlacementConfig cluster
// and no PodPlacementConfig: the cluster's nodeAffinityScoring weights of those architectures,
// unless the pod already weights architectures itself. Placement rules are not evaluated here:
// the simulator refuses scenarios that configure them.
func AddPreferences(pod *corev1.Pod, compatible []string, cluster *v1beta1.ClusterPodPlacementConfig) error {
	sources, err := placement.ScoringSources(pod, nil, nil, cluster)
	if err != nil {
		return err
	}
	placement.MergePreferredArchitectures(&pod.Spec, sets.New(compatible...), sources)
	return nil
}

// AddTolerations adds to pod the tolerations archgate adds to a pod whose images all support the
// architectures compatible: those of the cluster's architecture taints on these architectures
// that the pod does not tolerate yet, unless the pod's own constraints pin its architecture.
func AddTolerations(pod *corev1.Pod, compatible []string, cluster *v1beta1.ClusterPodPlacementConfig) {
	if placement.UserPinsArchitecture(&pod.Spec) {
		return
	}
	placement.AddArchitectureTolerations(&pod.Spec, sets.New(compatible...), v1beta1.ArchitectureTaintsOf(cluster))
}
