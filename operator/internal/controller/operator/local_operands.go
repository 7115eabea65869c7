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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// A namespace's local components (ClusterPodPlacementConfig spec.localPlacement). They get
// namespaced RBAC only, and one replica each: the local controller holds no Lease (a restart only
// delays the locally gated pods, whose gate the operator releases if the components go), and the
// local webhook fails open (failurePolicy Ignore: an unavailable replica costs the namespace's
// preferences for the pods created meanwhile, never their creation). Both are multiplied by the
// number of namespaces, which is what docs/local-placement.md measures.
const (
	LocalControllerReplicas = 1
	LocalWebhookReplicas    = 1
)

// localParams are the builders' inputs for namespace's local components: the operator's image
// and the ClusterPodPlacementConfig's verbosity; no owner reference (the operator removes them
// itself, releasing the local gates first).
func localParams(p operandParams, namespace string) operandParams {
	return operandParams{namespace: namespace, image: p.image, verbosity: p.verbosity, provider: p.provider, args: p.args,
		components: localComponents(p.components)}
}

// localComponents is what of spec.components reaches the local components: where they run and
// their priority. Not the pull secrets, which are the operator namespace's Secrets, nor the
// webhook's and controller's resources.
func localComponents(c *v1beta1.ComponentsConfig) *v1beta1.ComponentsConfig {
	if c == nil {
		return nil
	}
	return &v1beta1.ComponentsConfig{NodeSelector: c.NodeSelector, Tolerations: c.Tolerations, PriorityClassName: c.PriorityClassName}
}

func (p operandParams) localArgs() ComponentArgs {
	return ComponentArgs{
		Namespace:              p.namespace,
		LocalNamespace:         p.namespace,
		LogVerbosity:           p.verbosity,
		CertDir:                ServingCertDir,
		WebhookPort:            WebhookPort,
		MetricsBindAddress:     fmt.Sprintf(":%d", MetricsPort),
		HealthProbeBindAddress: fmt.Sprintf(":%d", HealthPort),
	}
}

// localControllerRole is everything a local controller may do, in its namespace only: read and
// patch the pods it gates, read the PodPlacementConfigs, record Events. No secret, no Lease.
func localControllerRole(p operandParams) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(LocalControllerComponentName, p.namespace).
		WithLabels(ManagedLabels(LocalControllerComponentName)).
		WithRules(
			policyRule("", []string{"pods"}, []string{"get", "list", "watch", "patch"}),
			policyRule("", []string{"events"}, []string{"create", "patch"}),
			policyRule("events.k8s.io", []string{"events"}, []string{"create", "patch"}),
			policyRule(v1beta1.GroupName, []string{"podplacementconfigs"}, []string{"get", "list", "watch"}),
		)
}

// localWebhookRole lets a local webhook read the PodPlacementConfigs of its namespace (it gates
// only the pods one of them selects), and nothing else.
func localWebhookRole(p operandParams) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(LocalWebhookComponentName, p.namespace).
		WithLabels(ManagedLabels(LocalWebhookComponentName)).
		WithRules(policyRule(v1beta1.GroupName, []string{"podplacementconfigs"}, []string{"get", "list", "watch"}))
}

func localWebhookService(p operandParams) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(LocalWebhookComponentName, p.namespace).
		WithLabels(ManagedLabels(LocalWebhookComponentName)).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(selectorLabels(LocalWebhookComponentName)).
			WithPorts(corev1ac.ServicePort().
				WithName("webhook").WithPort(443).WithTargetPort(intstr.FromString("webhook")).WithProtocol(corev1.ProtocolTCP)))
}

func localControllerDeployment(p operandParams) *appsv1ac.DeploymentApplyConfiguration {
	return deployment(p, LocalControllerComponentName, LocalControllerReplicas, p.args("controller", p.localArgs()))
}

func localWebhookDeployment(p operandParams) *appsv1ac.DeploymentApplyConfiguration {
	return servingDeployment(p, LocalWebhookComponentName, LocalWebhookReplicas, p.args("webhook", p.localArgs()), LocalWebhookServingSecretName)
}
