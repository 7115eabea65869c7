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

// Package validation holds the operator's validating admission webhooks for the
// multiarch.openshift.io API: a PodPlacementConfig needs the ClusterPodPlacementConfig, a
// priority of its own within its namespace and distinct architectures; the
// ClusterPodPlacementConfig cannot be deleted while PodPlacementConfigs depend on it.
//
// The rules are pure functions over the object and what exists in the cluster; the handlers
// only read the cluster (uncached) and turn the rules' answers into admission responses whose
// messages name the object, the field and the value.
package validation

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Webhook paths served by the operator.
const (
	// PathPodPlacementConfig validates PodPlacementConfig CREATE and UPDATE.
	PathPodPlacementConfig = "/validate-multiarch-openshift-io-v1beta1-podplacementconfig"
	// PathClusterPodPlacementConfig validates ClusterPodPlacementConfig DELETE.
	PathClusterPodPlacementConfig = "/validate-multiarch-openshift-io-v1beta1-clusterpodplacementconfig"
)

// maxListed bounds how many dependent objects a message names.
const maxListed = 5

// clusterState is what the PodPlacementConfig rules need to know about the cluster.
type clusterState struct {
	// cluster is the ClusterPodPlacementConfig, nil when it does not exist.
	cluster *v1beta1.ClusterPodPlacementConfig
	// siblings are the other PodPlacementConfigs of the namespace (the object itself excluded).
	siblings []v1beta1.PodPlacementConfig
}

// validateCreate returns why a new PodPlacementConfig must be refused, or nil.
func validateCreate(ppc *v1beta1.PodPlacementConfig, st clusterState) field.ErrorList {
	var errs field.ErrorList
	switch {
	case st.cluster == nil:
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"),
			fmt.Sprintf("no ClusterPodPlacementConfig %q exists: a PodPlacementConfig only tunes the placement that the "+
				"ClusterPodPlacementConfig enables, create that first", v1beta1.SingletonName)))
	case st.cluster.DeletionTimestamp != nil:
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"),
			fmt.Sprintf("ClusterPodPlacementConfig %q is being deleted: wait until it is gone and create it again first", v1beta1.SingletonName)))
	}
	errs = append(errs, validatePriority(ppc, st.siblings)...)
	errs = append(errs, validatePlatforms(field.NewPath("spec", "plugins"), ppc.Spec.Plugins)...)
	return errs
}

// validateUpdate returns why a change to a PodPlacementConfig must be refused, or nil. Only
// what changed is checked, so that objects admitted earlier stay editable (and deletable).
func validateUpdate(old, ppc *v1beta1.PodPlacementConfig, st clusterState) field.ErrorList {
	if ppc.DeletionTimestamp != nil {
		return nil
	}
	var errs field.ErrorList
	if old.Spec.Priority != ppc.Spec.Priority {
		errs = append(errs, validatePriority(ppc, st.siblings)...)
	}
	if !slices.Equal(platformArchitectures(old.Spec.Plugins), platformArchitectures(ppc.Spec.Plugins)) {
		errs = append(errs, validatePlatforms(field.NewPath("spec", "plugins"), ppc.Spec.Plugins)...)
	}
	return errs
}

// validatePriority refuses a priority another PodPlacementConfig of the namespace already has:
// the order of two configurations matching one pod would otherwise depend on their names.
func validatePriority(ppc *v1beta1.PodPlacementConfig, siblings []v1beta1.PodPlacementConfig) field.ErrorList {
	var holders []string
	for _, s := range siblings {
		if s.Name != ppc.Name && s.Spec.Priority == ppc.Spec.Priority {
			holders = append(holders, s.Namespace+"/"+s.Name)
		}
	}
	if len(holders) == 0 {
		return nil
	}
	slices.Sort(holders)
	return field.ErrorList{field.Invalid(field.NewPath("spec", "priority"), ppc.Spec.Priority,
		fmt.Sprintf("already used by PodPlacementConfig %s; each PodPlacementConfig of a namespace needs its own priority",
			strings.Join(holders, ", ")))}
}

// validatePlatforms refuses an architecture listed twice in nodeAffinityScoring.platforms.
func validatePlatforms(plugins *field.Path, p *v1beta1.Plugins) field.ErrorList {
	if p == nil || p.NodeAffinityScoring == nil {
		return nil
	}
	path := plugins.Child("nodeAffinityScoring", "platforms")
	var errs field.ErrorList
	first := map[string]int{}
	for i, pl := range p.NodeAffinityScoring.Platforms {
		arch := pl.Architecture
		if j, seen := first[arch]; seen {
			errs = append(errs, field.Invalid(path.Index(i).Child("architecture"), arch,
				fmt.Sprintf("already listed at %s; give each architecture one weight", path.Index(j).Child("architecture"))))
			continue
		}
		first[arch] = i
	}
	return errs
}

func platformArchitectures(p *v1beta1.Plugins) []string {
	if p == nil || p.NodeAffinityScoring == nil {
		return nil
	}
	var out []string
	for _, pl := range p.NodeAffinityScoring.Platforms {
		out = append(out, pl.Architecture)
	}
	return out
}

// deletionBlockers returns why the ClusterPodPlacementConfig cannot be deleted, or "".
func deletionBlockers(dependents []v1beta1.PodPlacementConfig) string {
	if len(dependents) == 0 {
		return ""
	}
	names := make([]string, 0, len(dependents))
	for _, d := range dependents {
		names = append(names, d.Namespace+"/"+d.Name)
	}
	slices.Sort(names)
	listed := strings.Join(names[:min(len(names), maxListed)], ", ")
	if len(names) > maxListed {
		listed += fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return fmt.Sprintf("%d PodPlacementConfig(s) still depend on it (%s): delete them first "+
		"(kubectl delete podplacementconfigs --all-namespaces --all)", len(names), listed)
}
