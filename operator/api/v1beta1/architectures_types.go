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

package v1beta1

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ArchitectureTaint is a taint the cluster keeps on every node of one architecture, such as
// GKE's kubernetes.io/arch=arm64:NoSchedule on Arm nodes. Without a toleration, the scheduler
// keeps a pod off those nodes whatever its node affinity allows.
type ArchitectureTaint struct {
	// architecture whose nodes carry the taint.
	// +kubebuilder:validation:Enum=amd64;arm64;ppc64le;s390x
	Architecture string `json:"architecture"`

	// key of the taint; kubernetes.io/arch when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=316
	Key string `json:"key,omitempty"`

	// value of the taint; the architecture when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value,omitempty"`

	// effect of the taint; NoSchedule when empty.
	// +optional
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect,omitempty"`
}

// Taint returns the taint with its defaults applied.
func (t ArchitectureTaint) Taint() corev1.Taint {
	return corev1.Taint{
		Key:    cmp.Or(t.Key, NodeArchLabel),
		Value:  cmp.Or(t.Value, t.Architecture),
		Effect: cmp.Or(t.Effect, corev1.TaintEffectNoSchedule),
	}
}

// Toleration returns the toleration placement adds for the taint: exactly this key, value and
// effect, so that it opens the architecture's nodes and nothing else.
func (t ArchitectureTaint) Toleration() corev1.Toleration {
	taint := t.Taint()
	return corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}
}

// ValidateArchitectureTaints returns what the apiserver would refuse in the tolerations the
// taints become, and taints listed twice, named by the ClusterPodPlacementConfig's field.
func ValidateArchitectureTaints(path *field.Path, taints []ArchitectureTaint) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.Taint]int{}
	supported := SupportedArchitectures()
	for i, t := range taints {
		p := path.Index(i)
		if !slices.Contains(supported, t.Architecture) {
			errs = append(errs, field.NotSupported(p.Child("architecture"), t.Architecture, supported))
		}
		errs = append(errs, validateToleration(p, t.Toleration())...)
		taint := t.Taint()
		if j, dup := seen[taint]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s=%s:%s (as entry %d)", taint.Key, taint.Value, taint.Effect, j)))
			continue
		}
		seen[taint] = i
	}
	return errs
}

// ArchitectureTaintsOf returns cluster's spec.architectureTaints, nil when cluster is nil.
func ArchitectureTaintsOf(cluster *ClusterPodPlacementConfig) []ArchitectureTaint {
	if cluster == nil {
		return nil
	}
	return cluster.Spec.ArchitectureTaints
}
