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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Platform is the kind of cluster the operator runs on; seed 004's rules for the linked
// objects depend on it.
type Platform string

// Platforms.
const (
	PlatformKubernetes Platform = "Kubernetes"
	PlatformOpenShift  Platform = "OpenShift"
)

// OpenShiftConfigGroup is the API group whose presence makes a cluster OpenShift.
const OpenShiftConfigGroup = "config.openshift.io"

// PlatformFromGroups is the platform of a cluster serving the API groups groups.
func PlatformFromGroups(groups []string) Platform {
	for _, g := range groups {
		if g == OpenShiftConfigGroup {
			return PlatformOpenShift
		}
	}
	return PlatformKubernetes
}

// DefaultGlobalPullSecretName is the name of the global pull secret when
// spec.globalPullSecretRef is unset (seed 004).
const DefaultGlobalPullSecretName = "pull-secret"

// OpenShiftGlobalPullSecretNamespace holds OpenShift's global pull secret.
const OpenShiftGlobalPullSecretNamespace = "openshift-config"

// GlobalPullSecret is the global pull secret the operator uses: spec.globalPullSecretRef
// (its namespace defaulted to operatorNamespace) when set (defaulted false); otherwise the
// platform's default (defaulted true), openshift-config/pull-secret on OpenShift and
// <operatorNamespace>/pull-secret elsewhere.
func (s *ClusterPodPlacementConfigSpec) GlobalPullSecret(p Platform, operatorNamespace string) (ref types.NamespacedName, defaulted bool) {
	if s.GlobalPullSecretRef != nil {
		return *s.GlobalPullSecretRef.NamespacedName(operatorNamespace), false
	}
	if p == PlatformOpenShift {
		return types.NamespacedName{Namespace: OpenShiftGlobalPullSecretNamespace, Name: DefaultGlobalPullSecretName}, true
	}
	return types.NamespacedName{Namespace: operatorNamespace, Name: DefaultGlobalPullSecretName}, true
}

// ValidateForPlatform returns the seed 004 rules that depend on the platform, which the CRD's
// schema cannot know: on OpenShift the cluster's own global pull secret is always used, so
// spec.globalPullSecretRef is refused (caBundleConfigmapRef stays allowed: archgate does not
// read OpenShift's injected trusted CA bundle on its own). Elsewhere the reference is
// required in effect, and GlobalPullSecret supplies its default.
func (s *ClusterPodPlacementConfigSpec) ValidateForPlatform(p Platform, path *field.Path) field.ErrorList {
	if p != PlatformOpenShift || s.GlobalPullSecretRef == nil {
		return nil
	}
	return field.ErrorList{field.Forbidden(path.Child("globalPullSecretRef"),
		"on OpenShift archgate always uses the cluster's global pull secret "+OpenShiftGlobalPullSecretNamespace+"/"+
			DefaultGlobalPullSecretName+" (add registry credentials there); remove spec.globalPullSecretRef")}
}
