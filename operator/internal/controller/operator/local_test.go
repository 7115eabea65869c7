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

package operator

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestWantLocalComponents(t *testing.T) {
	enabled := &v1beta1.ClusterPodPlacementConfig{Spec: v1beta1.ClusterPodPlacementConfigSpec{LocalPlacement: v1beta1.LocalPlacementEnabled}}
	disabled := &v1beta1.ClusterPodPlacementConfig{}
	deleting := enabled.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	config := v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	goingConfig := *config.DeepCopy()
	goingConfig.DeletionTimestamp = ptr.To(metav1.Now())
	for name, tc := range map[string]struct {
		cluster *v1beta1.ClusterPodPlacementConfig
		configs []v1beta1.PodPlacementConfig
		want    bool
	}{
		"enabled, one configuration":               {enabled, []v1beta1.PodPlacementConfig{config}, true},
		"enabled, the last configuration going":    {enabled, []v1beta1.PodPlacementConfig{goingConfig}, false},
		"enabled, one of two configurations going": {enabled, []v1beta1.PodPlacementConfig{goingConfig, config}, true},
		"enabled, no configuration":                {enabled, nil, false},
		"disabled (the default)":                   {disabled, []v1beta1.PodPlacementConfig{config}, false},
		"no ClusterPodPlacementConfig":             {nil, []v1beta1.PodPlacementConfig{config}, false},
		"ClusterPodPlacementConfig being deleted":  {deleting, []v1beta1.PodPlacementConfig{config}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := WantLocalComponents(tc.cluster, tc.configs); got != tc.want {
				t.Errorf("WantLocalComponents = %v, want %v", got, tc.want)
			}
		})
	}
}
