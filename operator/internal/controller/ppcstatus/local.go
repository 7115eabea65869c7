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

package ppcstatus

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// LocalComponents is what the status knows of a namespace's local components.
type LocalComponents struct {
	// Enabled is set when the ClusterPodPlacementConfig enables local placement.
	Enabled bool
	// Deployments are the namespace's local Deployments by name; a missing one is absent.
	Deployments map[string]*appsv1.Deployment
	// Names are the Deployments the namespace must have (controller and webhook).
	Names []string
}

// NamespaceConditions returns the conditions every PodPlacementConfig of a namespace reports
// about the namespace: NamespaceConfigsValid from siblings (all the namespace's
// configurations, ppc included), and Available, Progressing and Degraded of the local components.
func NamespaceConditions(ppc *v1beta1.PodPlacementConfig, siblings []v1beta1.PodPlacementConfig, local LocalComponents) []metav1.Condition {
	gen := ppc.Generation
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	out := []metav1.Condition{namespaceValid(siblings, cond)}
	return append(out, localConditions(local, cond)...)
}

// namespaceValid reports the invalid selectors and shared priorities among configs.
func namespaceValid(configs []v1beta1.PodPlacementConfig, cond condFunc) metav1.Condition {
	const t = v1beta1.ConditionNamespaceConfigsValid
	byPriority := map[int32][]string{}
	var invalid []string
	for i := range configs {
		c := &configs[i]
		if !c.DeletionTimestamp.IsZero() {
			continue
		}
		byPriority[c.Spec.Priority] = append(byPriority[c.Spec.Priority], c.Name)
		if err := validateSelector(c); err != nil {
			invalid = append(invalid, fmt.Sprintf("%s (%v)", c.Name, err))
		}
	}
	var shared []string
	for p, names := range byPriority {
		if len(names) > 1 {
			slices.Sort(names)
			shared = append(shared, fmt.Sprintf("priority %d: %s", p, strings.Join(names, ", ")))
		}
	}
	slices.Sort(shared)
	slices.Sort(invalid)
	switch {
	case len(shared) > 0:
		return cond(t, false, v1beta1.ReasonPriorityConflict, "PodPlacementConfigs sharing a priority (ordered by name): "+strings.Join(shared, "; "))
	case len(invalid) > 0:
		return cond(t, false, v1beta1.ReasonInvalidLabelSelector, "PodPlacementConfigs ignored for an invalid labelSelector: "+strings.Join(invalid, "; "))
	}
	return cond(t, true, v1beta1.ReasonAsExpected, "every PodPlacementConfig of the namespace has a valid selector and its own priority")
}

// localConditions are Available, Progressing and Degraded of the local components.
func localConditions(local LocalComponents, cond condFunc) []metav1.Condition {
	if !local.Enabled {
		msg := "no local components: the cluster-wide controller applies the configuration"
		return []metav1.Condition{
			cond(v1beta1.ConditionAvailable, true, v1beta1.ReasonLocalPlacementDisabled, msg),
			cond(v1beta1.ConditionProgressing, false, v1beta1.ReasonLocalPlacementDisabled, msg),
			cond(v1beta1.ConditionDegraded, false, v1beta1.ReasonLocalPlacementDisabled, msg),
		}
	}
	var unavailable, rolling, failed []string
	for _, name := range local.Names {
		d := local.Deployments[name]
		switch {
		case d == nil:
			unavailable, rolling = append(unavailable, name+" not created yet"), append(rolling, name)
			continue
		case !deploymentCondition(d, appsv1.DeploymentAvailable, corev1.ConditionTrue):
			unavailable = append(unavailable, fmt.Sprintf("%s: %d/%d replicas available", name, d.Status.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 1)))
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < ptr.Deref(d.Spec.Replicas, 1) {
			rolling = append(rolling, name)
		}
		if deploymentCondition(d, appsv1.DeploymentReplicaFailure, corev1.ConditionTrue) ||
			deploymentCondition(d, appsv1.DeploymentProgressing, corev1.ConditionFalse) {
			failed = append(failed, name)
		}
	}
	available := cond(v1beta1.ConditionAvailable, true, v1beta1.ReasonAllComponentsReady, "the namespace's local controller and webhook are available")
	if len(unavailable) > 0 {
		available = cond(v1beta1.ConditionAvailable, false, v1beta1.ReasonComponentsUnavailable, strings.Join(unavailable, "; "))
	}
	progressing := cond(v1beta1.ConditionProgressing, false, v1beta1.ReasonAsExpected, "rolled out")
	if len(rolling) > 0 {
		progressing = cond(v1beta1.ConditionProgressing, true, v1beta1.ReasonRollingOut, "rolling out: "+strings.Join(rolling, ", "))
	}
	degraded := cond(v1beta1.ConditionDegraded, false, v1beta1.ReasonAsExpected, "no local component failed")
	if len(failed) > 0 {
		degraded = cond(v1beta1.ConditionDegraded, true, v1beta1.ReasonComponentsUnavailable, "rollout failed: "+strings.Join(failed, ", "))
	}
	return []metav1.Condition{available, progressing, degraded}
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType, status corev1.ConditionStatus) bool {
	return slices.ContainsFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool { return c.Type == t && c.Status == status })
}
