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
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ComponentsConfig schedules and sizes the components the operator runs. imagePullSecrets and
// the resources apply to the webhook and the pod placement controller in the operator's
// namespace; nodeSelector, tolerations and priorityClassName also to the local components of
// namespaces with local placement (whose pods cannot use Secrets of the operator's namespace).
type ComponentsConfig struct {
	// imagePullSecrets name Secrets in the operator's namespace that the components' pods pull
	// archgate's image with: an image in a private registry or mirror.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// nodeSelector keeps the components' pods on nodes with these labels (for example dedicated
	// infrastructure nodes), in addition to Linux nodes of an architecture archgate's image
	// supports.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations let the components' pods run on tainted nodes, such as control-plane or
	// infrastructure nodes.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// priorityClassName is the PriorityClass of the components' pods; none by default. The
	// webhook gates new pods and the controller releases them, so a class above the workloads'
	// keeps both scheduled on a full cluster (system-cluster-critical, for example).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// webhook sizes the webhook's container.
	// +optional
	Webhook *ComponentResources `json:"webhook,omitempty"`

	// controller sizes the pod placement controller's container.
	// +optional
	Controller *ComponentResources `json:"controller,omitempty"`
}

// ComponentResources sizes one component's container.
type ComponentResources struct {
	// resources replace the container's default requests and limits as a whole. The Go runtime's
	// soft memory limit (GOMEMLIMIT) follows the memory limit; without a memory limit none is set.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// ResourcesOf returns the resources set for c (a *ComponentResources field of ComponentsConfig,
// possibly nil), nil when the defaults apply.
func ResourcesOf(c *ComponentResources) *corev1.ResourceRequirements {
	if c == nil {
		return nil
	}
	return c.Resources
}

// Validate returns what the apiserver would refuse in the components' pod template, named by
// the ClusterPodPlacementConfig's field rather than by a Deployment's: the operator's
// validating webhook runs it, so a wrong value is refused when it is written, not found later
// in a Deployment that cannot create pods.
func (c *ComponentsConfig) Validate(path *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	for i, s := range c.ImagePullSecrets {
		errs = append(errs, dnsSubdomain(path.Child("imagePullSecrets").Index(i).Child("name"), s.Name)...)
	}
	errs = append(errs, metav1validation.ValidateLabels(c.NodeSelector, path.Child("nodeSelector"))...)
	for i, t := range c.Tolerations {
		errs = append(errs, validateToleration(path.Child("tolerations").Index(i), t)...)
	}
	if c.PriorityClassName != "" {
		errs = append(errs, dnsSubdomain(path.Child("priorityClassName"), c.PriorityClassName)...)
	}
	errs = append(errs, validateResources(path.Child("webhook", "resources"), ResourcesOf(c.Webhook))...)
	errs = append(errs, validateResources(path.Child("controller", "resources"), ResourcesOf(c.Controller))...)
	return errs
}

func dnsSubdomain(path *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateToleration checks the rules the apiserver applies to a pod's toleration.
func validateToleration(path *field.Path, t corev1.Toleration) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(path.Child("key"), t.Key, msg))
		}
	}
	switch t.Operator {
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			errs = append(errs, field.Invalid(path.Child("operator"), t.Operator, "must be Exists when key is empty"))
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(path.Child("value"), t.Value, msg))
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(path.Child("value"), t.Value, "must be empty when operator is Exists"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("operator"), t.Operator, []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		errs = append(errs, field.NotSupported(path.Child("effect"), t.Effect,
			[]string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}))
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		errs = append(errs, field.Invalid(path.Child("effect"), t.Effect, "must be NoExecute when tolerationSeconds is set"))
	}
	return errs
}

// validateResources checks that no request exceeds its limit and no quantity is negative.
func validateResources(path *field.Path, r *corev1.ResourceRequirements) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	for name, q := range r.Limits {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Child("limits").Key(string(name)), q.String(), "must not be negative"))
		}
	}
	for name, q := range r.Requests {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), q.String(), "must not be negative"))
			continue
		}
		if limit, ok := r.Limits[name]; ok && q.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), q.String(),
				"must be less than or equal to the limit "+limit.String()))
		}
	}
	return errs
}
