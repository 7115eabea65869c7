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
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/knownimages"
)

// FieldOwner is the server-side apply field manager of every object the operator writes.
const FieldOwner = "archgate-operator"

// Finalizer holds the ClusterPodPlacementConfig until the gated pods are released and the
// components deleted.
const Finalizer = v1beta1.GroupName + "/operand-cleanup"

// Names of the components' objects, in the operator's namespace unless cluster-scoped.
const (
	// WebhookComponentName names the webhook's Deployment, Service, ServiceAccount,
	// PodDisruptionBudget, Role, RoleBinding, ClusterRole and ClusterRoleBinding.
	WebhookComponentName = "archgate-webhook"
	// ControllerComponentName names the pod placement controller's Deployment, ServiceAccount,
	// PodDisruptionBudget, Role, RoleBinding, ClusterRole and ClusterRoleBinding.
	ControllerComponentName = "archgate-controller"
	// ControllerPullSecretRoleName names the Role and RoleBinding, in the global pull secret's
	// namespace, that let earlier versions' controller watch that one secret; the operator
	// deletes any left (its cluster-wide RBAC names them in resourceNames, for delete only).
	ControllerPullSecretRoleName = "archgate-controller-pull-secret"
	// ControllerPodDeleterName is the ClusterRole (installed with the operator, config/rbac)
	// that lets the controller delete pods, and the ClusterRoleBinding the operator creates
	// for the exec-format-error monitor's action DeletePod only: the operator may bind that
	// role without holding pod deletion itself.
	ControllerPodDeleterName = "archgate-controller-pod-deleter"
	// WebhookServingSecretName holds the webhook's serving certificate.
	WebhookServingSecretName = "archgate-webhook-serving-cert"
	// WebhookCertificateName is the cert-manager Certificate of the webhook (ProviderCertManager).
	WebhookCertificateName = "archgate-webhook"
	// RegistryCABundleName is the operator's copy of the caBundleConfigmapRef ConfigMap, which
	// may live in another namespace than the pods that mount it.
	RegistryCABundleName = "archgate-registry-ca-bundle"
	// RegistriesConfName and RegistryCertsName are the operator's copies of the
	// registriesConfConfigmapRef and registryCertsConfigmapRef ConfigMaps, mounted by the
	// controller; RegistriesConfName also holds the drop-in rendered from the cluster's mirror
	// sets (MirrorSetsKey).
	RegistriesConfName = "archgate-registries-conf"
	RegistryCertsName  = "archgate-registry-certs"
	// CredentialProvidersName is the operator's copy of the ConfigMap named by
	// imageInspection.credentialProviders.configConfigmapRef, mounted by the controller.
	CredentialProvidersName = "archgate-credential-providers"
	// KnownImagesName is the ConfigMap in which the controller publishes the images it inspected
	// anonymously, for the webhook's admission placement (package knownimages).
	KnownImagesName = knownimages.DefaultConfigMapName
	// PlacementParametersName is the ConfigMap in which the controller publishes the admission
	// policy's params.
	PlacementParametersName = knownimages.DefaultParametersConfigMapName
	// WebhookMetricsServiceName and ControllerMetricsServiceName are the Services in front of
	// the components' HTTPS metrics endpoints (MetricsServiceLabel selects them); the
	// installation manifests add archgate-operator-metrics for the operator.
	WebhookMetricsServiceName    = WebhookComponentName + "-metrics"
	ControllerMetricsServiceName = ControllerComponentName + "-metrics"
	// WebhookMetricsSecretName and ControllerMetricsSecretName hold the serving certificates of
	// the components' metrics endpoints, for their metrics Services' DNS names
	// (certs.Provider.MetricsProvider issues them).
	WebhookMetricsSecretName    = WebhookComponentName + "-metrics-cert"
	ControllerMetricsSecretName = ControllerComponentName + "-metrics-cert"
	// MetricsCAConfigMapName is where the operator publishes the CA bundle that verifies every
	// metrics endpoint's certificate (key ca.crt) when its own CA issues them, for a
	// ServiceMonitor's tlsConfig.ca: a ConfigMap, since a CA certificate is no secret.
	MetricsCAConfigMapName = "archgate-metrics-ca"
	// DefaultMutatingWebhookConfigurationName names the MutatingWebhookConfiguration.
	DefaultMutatingWebhookConfigurationName = "archgate-scheduling-gate"
	// AdmissionPolicyName names the MutatingAdmissionPolicy that places pods in the apiserver
	// and its binding; AdmissionPolicyProbeName the policy (and binding) that shows whether the
	// apiserver applies policies at all.
	AdmissionPolicyName      = "archgate-placement"
	AdmissionPolicyProbeName = "archgate-placement-probe"

	// LocalControllerComponentName and LocalWebhookComponentName name a namespace's local
	// components (ClusterPodPlacementConfig spec.localPlacement): Deployment, ServiceAccount,
	// Role and RoleBinding, and the webhook's Service, all in that namespace.
	LocalControllerComponentName = "archgate-local-controller"
	LocalWebhookComponentName    = "archgate-local-webhook"
	// LocalWebhookServingSecretName holds a local webhook's serving certificate, in its namespace.
	LocalWebhookServingSecretName = "archgate-local-webhook-serving-cert"
	// LocalMutatingWebhookConfigurationName names the MutatingWebhookConfiguration holding one
	// entry per namespace with local components. It sorts before
	// DefaultMutatingWebhookConfigurationName, and the apiserver calls mutating webhooks in the
	// order of their configurations' names, so a pod normally reaches the cluster-wide webhook
	// already carrying the local gate; the other order is handled too (placement.ClusterStage,
	// webhook.NeedsLocalGate).
	LocalMutatingWebhookConfigurationName = "archgate-local-scheduling-gate"
)

// Labels and annotations on the components.
const (
	// LabelName, LabelComponent, LabelPartOf and LabelManagedBy are the recommended labels.
	LabelName      = "app.kubernetes.io/name"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// PartOf and ManagedBy are the values of LabelPartOf and LabelManagedBy.
	PartOf    = "archgate"
	ManagedBy = "archgate-operator"
	// MetricsServiceLabel marks the metrics Services, for a ServiceMonitor to select
	// (deploy/components/monitoring).
	MetricsServiceLabel = v1beta1.GroupName + "/metrics"
	// AnnotationLinkedObjectsHash on the controller's pod template changes when the pull secret
	// or the CA bundle changes, which rolls the controller.
	AnnotationLinkedObjectsHash = v1beta1.GroupName + "/linked-objects-hash"
	// CABundleKey is the ConfigMap key of the registry CA bundle.
	CABundleKey = "ca-bundle.crt"
	// RegistriesConfKey is the ConfigMap key of the registries.conf content.
	RegistriesConfKey = "registries.conf"
	// MirrorSetsKey is the RegistriesConfName key of the registries.conf drop-in rendered from
	// the ImageDigestMirrorSet and ImageTagMirrorSet objects.
	MirrorSetsKey = "mirror-sets.conf"
)

// Ports and paths inside the components' pods.
const (
	// WebhookPort is the webhook server's container port; the Service exposes it on 443.
	WebhookPort = 9443
	// MetricsPort and HealthPort serve /metrics and /healthz, /readyz.
	MetricsPort = 8443
	HealthPort  = 8081
	// ServingCertDir is where the webhook's serving certificate is mounted.
	ServingCertDir = "/var/run/archgate/serving-cert"
	// MetricsCertDir is where a component's metrics serving certificate is mounted.
	MetricsCertDir = "/var/run/archgate/metrics-cert"
	// RegistryCADir is where the registry CA bundle is mounted in the controller.
	RegistryCADir = "/etc/archgate/registry-ca"
	// RegistriesConfDir holds the mounted registries.conf; CertsDir the per-registry
	// certificates, <host[:port]>/ca.crt.
	RegistriesConfDir = "/etc/archgate/registries"
	CertsDir          = "/etc/archgate/certs.d"
	// RegistriesConfDropInDir is the controller's --registries-conf-dir, holding MirrorSetsKey.
	RegistriesConfDropInDir = "/etc/archgate/registries.conf.d"
	// CredentialProvidersDir holds the mounted CredentialProviderConfig; CredentialProviderBinDir
	// is where the nodes' plugin directory (credentialProviders.hostBinDir) is mounted.
	CredentialProvidersDir   = "/etc/archgate/credential-providers"
	CredentialProviderBinDir = "/var/lib/archgate/credential-provider-bin"
	// MirrorCredentialsDir holds the mounted mirror credentials Secret, whose key
	// .dockerconfigjson is mounted as the auth file MirrorCredentialsFile.
	MirrorCredentialsDir  = "/etc/archgate/mirror-credentials"
	MirrorCredentialsFile = "auth.json"
	// HostFilesDir is where the controller's init container mounts the host files of
	// credentialProviders.hostFiles, each under its index; HostFilesCopyDir is the
	// memory-backed emptyDir it copies them into, which the controller mounts file by file at
	// the files' host paths. Both are under reserved directories (v1beta1.ReservedHostPaths).
	HostFilesDir     = "/var/lib/archgate/host-files"
	HostFilesCopyDir = "/var/run/archgate/host-files"
)

// ControllerUID and ControllerGID are the user and group the controller runs as with
// credentialProviders.hostFiles, set explicitly so that they are the ones the copies are given
// to: the image's own user (image.NonRootUser, which a test compares).
const (
	ControllerUID = 65532
	ControllerGID = 65532
)

// ManagedLabels returns the labels of every object the operator creates for a component.
func ManagedLabels(component string) map[string]string {
	return map[string]string{
		LabelName:      component,
		LabelComponent: componentOf(component),
		LabelPartOf:    PartOf,
		LabelManagedBy: ManagedBy,
	}
}

// The values of LabelComponent: what a Deployment runs, whatever the operand's name.
const (
	componentWebhook         = "webhook"
	componentController      = "controller"
	componentLocalWebhook    = "local-webhook"
	componentLocalController = "local-controller"
	componentOperator        = "operator"
)

func componentOf(name string) string {
	switch name {
	case WebhookComponentName:
		return componentWebhook
	case ControllerComponentName:
		return componentController
	case LocalWebhookComponentName:
		return componentLocalWebhook
	case LocalControllerComponentName:
		return componentLocalController
	default:
		return componentOperator
	}
}
