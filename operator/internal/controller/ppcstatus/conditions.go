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

// Package ppcstatus writes the status of PodPlacementConfigs: whether the selector is valid and
// whether the configuration is in effect. The rules are a pure function (Conditions); the controller reads the
// cache and writes only when a condition changed, so a stable cluster costs no write.
package ppcstatus

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Conditions returns the status conditions of ppc, given the ClusterPodPlacementConfig (nil when
// there is none).
// LastTransitionTime is left zero: meta.SetStatusCondition sets it on a change.
func Conditions(ppc *v1beta1.PodPlacementConfig, cluster *v1beta1.ClusterPodPlacementConfig) []metav1.Condition {
	gen := ppc.Generation
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	selectorErr := validateSelector(ppc)
	valid := cond(v1beta1.ConditionSelectorValid, true, v1beta1.ReasonAsExpected, "spec.labelSelector is valid")
	if selectorErr != nil {
		valid = cond(v1beta1.ConditionSelectorValid, false, v1beta1.ReasonInvalidLabelSelector,
			fmt.Sprintf("spec.labelSelector: %v; the configuration is ignored", selectorErr))
	}
	return []metav1.Condition{valid, inEffect(ppc, cluster, selectorErr, cond)}
}

type condFunc func(t string, ok bool, reason, msg string) metav1.Condition

func validateSelector(ppc *v1beta1.PodPlacementConfig) error {
	if ppc.Spec.LabelSelector == nil {
		return nil
	}
	_, err := metav1.LabelSelectorAsSelector(ppc.Spec.LabelSelector)
	return err
}

func inEffect(ppc *v1beta1.PodPlacementConfig, cluster *v1beta1.ClusterPodPlacementConfig, selectorErr error, cond condFunc) metav1.Condition {
	const t = v1beta1.ConditionInEffect
	switch {
	case cluster == nil:
		return cond(t, false, v1beta1.ReasonClusterConfigMissing, "no ClusterPodPlacementConfig "+v1beta1.SingletonName+": pods are not gated nor placed")
	case !meta.IsStatusConditionTrue(cluster.Status.Conditions, v1beta1.ConditionAvailable):
		return cond(t, false, v1beta1.ReasonClusterConfigNotAvailable, "the ClusterPodPlacementConfig is not Available")
	case selectorErr != nil:
		return cond(t, false, v1beta1.ReasonInvalidLabelSelector, "spec.labelSelector is invalid")
	case !ppc.Spec.Plugins.NodeAffinityScoringEnabled():
		return cond(t, false, v1beta1.ReasonPluginDisabled, "spec.plugins.nodeAffinityScoring is not enabled: no weight to apply")
	}
	return cond(t, true, v1beta1.ReasonApplied, fmt.Sprintf(
		"weights applied at priority %d to the selected pods of namespace %s (within the ClusterPodPlacementConfig's namespaceSelector)",
		ppc.Spec.Priority, ppc.Namespace))
}
