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
	"cmp"
	"fmt"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/cmdline"
)

// Replica counts of the components.
const (
	// WebhookReplicas keeps the webhook up through a node drain and a rolling update.
	WebhookReplicas = 3
	// ControllerReplicas gives the leader-elected controller a warm standby.
	ControllerReplicas = 2
	// WebhookDrainSeconds is the webhook's preStop delay: a terminating replica keeps serving
	// while the apiserver and the Service proxies drop its endpoint (seconds, usually ~1-2 s),
	// so that no admission call of a rolling update is lost and no pod is admitted ungated.
	WebhookDrainSeconds = 10
	// ShutdownTimeout bounds how long a component's manager waits for its controllers and
	// servers to stop (pkg/components), so that a reconciler stuck on a registry cannot hold
	// a terminating pod.
	ShutdownTimeout = 30 * time.Second
	// shutdownMarginSeconds is what a component still does after its manager stopped: release
	// its leader-election Lease, flush Events and logs.
	shutdownMarginSeconds = 10
	// TerminationGraceSeconds lets every component finish its graceful shutdown before the
	// kubelet kills it: a controller killed before it released its Lease leaves the standby
	// waiting for the Lease to expire, with pods gated meanwhile.
	TerminationGraceSeconds = int64(ShutdownTimeout/time.Second) + shutdownMarginSeconds
	// WebhookTerminationGraceSeconds outlasts the drain by the server's own graceful shutdown.
	WebhookTerminationGraceSeconds = WebhookDrainSeconds + TerminationGraceSeconds
)

// operandParams is what the component builders need from the ClusterPodPlacementConfig and the
// operator's options.
type operandParams struct {
	namespace string
	image     string
	// verbosity is the components' log verbosity.
	verbosity v1beta1.LogVerbosityLevel
	// inspection is spec.imageInspection with its defaults resolved (nil renders no flags).
	inspection *v1beta1.ImageInspectionSettings
	// admissionPlacement is spec.admissionPlacement: both components get the known-images
	// ConfigMap in their arguments.
	admissionPlacement bool
	// admissionPolicy is set when the admission policy is rendered (admissionpolicy.Wanted and
	// served): the controller publishes its params.
	admissionPolicy bool
	// execFormatErrorMonitor is spec.plugins.execFormatErrorMonitor enabled: the controller runs
	// the monitor and may read node metadata.
	execFormatErrorMonitor bool
	// execFormatErrorDeleteInterval is set for the monitor's action DeletePod: the controller
	// deletes reported pods (at most once per owner per interval) and may delete pods.
	execFormatErrorDeleteInterval time.Duration
	// pullSecret names the global pull secret, nil when none is configured.
	pullSecret *types.NamespacedName
	// caBundle is set when a registry CA bundle is configured (and copied to RegistryCABundleName).
	caBundle bool
	// registriesConf is set when a registries.conf is configured (copied to RegistriesConfName);
	// registryCerts lists the keys of the per-registry certificates (copied to RegistryCertsName).
	registriesConf bool
	registryCerts  []string
	// mirrorSets is set when the cluster's mirror sets render a drop-in (MirrorSetsKey of
	// RegistriesConfName), mounted as the controller's --registries-conf-dir.
	mirrorSets bool
	// credentialProvidersHostBinDir is set when credential provider plugins are configured
	// (their configuration copied to CredentialProvidersName): the plugins' directory on the
	// nodes, mounted into the controller.
	credentialProvidersHostBinDir string
	// credentialProvidersHostFiles are the host files the plugins' args name
	// (credentialProviders.hostFiles), mounted into the controller at their own paths.
	credentialProvidersHostFiles []string
	// mirrorCredentials is the Secret of imageInspection.mirrorCredentialsSecretRef (operator's
	// namespace), mounted into the controller as its auth file for mirrors; "" when unset.
	mirrorCredentials string
	// proxyEnv is the operator's HTTP_PROXY, HTTPS_PROXY and NO_PROXY (and lowercase) variables,
	// passed on to the components.
	proxyEnv []corev1.EnvVar
	// linkedHash identifies the versions of the linked objects (see linkedState.hash).
	linkedHash string
	// provider issues the webhook's serving certificate.
	provider certs.Provider
	// args build the components' command lines.
	args ArgsFunc
	// owner is the controller owner reference to the ClusterPodPlacementConfig set on every
	// object; nil in unit tests.
	owner *metav1ac.OwnerReferenceApplyConfiguration
	// components is spec.components: scheduling and sizing of the components' pods; nil keeps
	// the defaults.
	components *v1beta1.ComponentsConfig
}

// ArgsFunc returns the container arguments of a component ("webhook" or "controller").
type ArgsFunc func(component string, a ComponentArgs) []string

// ComponentArgs is what a component's command line carries.
type ComponentArgs struct {
	// Namespace is the operator's namespace (its pods are never gated; the controller's lease).
	Namespace string
	// LogVerbosity is the ClusterPodPlacementConfig's spec.logVerbosity.
	LogVerbosity v1beta1.LogVerbosityLevel
	// CertDir holds the webhook's tls.crt and tls.key.
	CertDir string
	// WebhookPort is the webhook server's port.
	WebhookPort int
	// MetricsBindAddress and HealthProbeBindAddress are the listen addresses of /metrics and
	// the health probes.
	MetricsBindAddress, HealthProbeBindAddress string
	// MetricsCertDir holds the metrics endpoint's tls.crt and tls.key, or "" for a certificate
	// the component generates (which no scraper can verify).
	MetricsCertDir string
	// GlobalPullSecret names the global pull secret, or nil.
	GlobalPullSecret *types.NamespacedName
	// RegistryCABundleFile is the path of the mounted registry CA bundle, or "".
	RegistryCABundleFile string
	// RegistriesConfFile is the path of the mounted registries.conf, or "".
	RegistriesConfFile string
	// RegistriesConfDir is the mounted registries.conf.d of the mirror sets' drop-in, or "".
	RegistriesConfDir string
	// MirrorAuthFile is the path of the mounted mirror credentials (an auth file), or "".
	MirrorAuthFile string
	// CertsDir is the mounted certs.d directory, or "".
	CertsDir string
	// CredentialProviderConfigFile and CredentialProviderBinDir are the mounted
	// CredentialProviderConfig and plugin directory, or "".
	CredentialProviderConfigFile, CredentialProviderBinDir string
	// ImageInspection is the ClusterPodPlacementConfig's spec.imageInspection, resolved; nil
	// leaves the controller's flags at the API's defaults.
	ImageInspection *v1beta1.ImageInspectionSettings
	// KnownImagesConfigMap is the ConfigMap of admission placement, or "" when it is off.
	KnownImagesConfigMap string
	// PlacementParameters is the ConfigMap of the admission policy's params, or "" when the
	// policy is not rendered.
	PlacementParameters string
	// ExecFormatErrorMonitor runs the exec-format-error monitor in the controller;
	// ExecFormatErrorDeleteInterval, when set, makes it delete the pods it reports.
	ExecFormatErrorMonitor        bool
	ExecFormatErrorDeleteInterval time.Duration
	// LocalNamespace is set for a namespace's local components (`--namespace`): they then get
	// only the common flags, the verbosity and, for the webhook, its serving flags.
	LocalNamespace string
}

// DefaultArgs is the command line of the archgate binary's `webhook` and `controller`
// subcommands, rendered by package cmdline (which the binary parses with).
func DefaultArgs(component string, a ComponentArgs) []string {
	common := cmdline.Common{MetricsBindAddress: a.MetricsBindAddress, HealthProbeBindAddress: a.HealthProbeBindAddress, MetricsCertDir: a.MetricsCertDir}
	if a.LocalNamespace != "" {
		// A local component holds namespaced RBAC only, and authenticating a metrics scrape
		// needs cluster-scoped tokenreviews and subjectaccessreviews: it serves no metrics.
		common = cmdline.Common{MetricsBindAddress: "0", HealthProbeBindAddress: a.HealthProbeBindAddress}
	}
	var flags []string
	switch component {
	case cmdline.WebhookCommand:
		flags = webhookFlags(a, common).Args()
	case cmdline.ControllerCommand:
		flags = controllerFlags(a, common).Args()
	}
	return cmdline.Command(component, cmdline.Global{LogVerbosity: cmp.Or(a.LogVerbosity, v1beta1.LogVerbosityNormal)}, flags)
}

// webhookFlags are the webhook's flags for a; a local webhook gets its serving flags only.
func webhookFlags(a ComponentArgs, common cmdline.Common) cmdline.Webhook {
	w := cmdline.Webhook{Common: common, CertDir: a.CertDir, Port: a.WebhookPort}
	if a.LocalNamespace != "" {
		w.Namespace = a.LocalNamespace
		return w
	}
	w.OperatorNamespace, w.KnownImagesConfigMap = a.Namespace, a.KnownImagesConfigMap
	if a.ImageInspection != nil {
		// Pods naming more images are admitted ungated: the controller would release them
		// unplaced anyway, after two more writes of a pod that large.
		w.MaxImagesPerPod = a.ImageInspection.MaxImagesPerPod
	}
	return w
}

// controllerFlags are the controller's flags for a; a local controller gets none of its own.
func controllerFlags(a ComponentArgs, common cmdline.Common) cmdline.Controller {
	if a.LocalNamespace != "" {
		return cmdline.Controller{Common: common, Namespace: a.LocalNamespace}
	}
	c := cmdline.Controller{
		Common:                       common,
		OperatorNamespace:            a.Namespace,
		KnownImagesConfigMap:         a.KnownImagesConfigMap,
		LeaderElection:               true,
		GlobalPullSecret:             a.GlobalPullSecret,
		CABundleFile:                 a.RegistryCABundleFile,
		RegistriesConfPath:           a.RegistriesConfFile,
		RegistriesConfDirPath:        a.RegistriesConfDir,
		AuthFilePath:                 a.MirrorAuthFile,
		CertsDir:                     a.CertsDir,
		ImageInspection:              a.ImageInspection,
		ExecFormatErrorMonitor:       a.ExecFormatErrorMonitor,
		PlacementParametersConfigMap: a.PlacementParameters,
	}
	if a.CredentialProviderConfigFile != "" {
		c.CredentialProviderConfig, c.CredentialProviderBinDir = a.CredentialProviderConfigFile, a.CredentialProviderBinDir
	}
	if a.ExecFormatErrorMonitor {
		c.ExecFormatErrorDeleteInterval = a.ExecFormatErrorDeleteInterval
	}
	return c
}

func (p operandParams) componentArgs() ComponentArgs {
	a := ComponentArgs{
		Namespace:              p.namespace,
		LogVerbosity:           p.verbosity,
		CertDir:                ServingCertDir,
		WebhookPort:            WebhookPort,
		MetricsBindAddress:     fmt.Sprintf(":%d", MetricsPort),
		HealthProbeBindAddress: fmt.Sprintf(":%d", HealthPort),
		MetricsCertDir:         MetricsCertDir,
		ImageInspection:        p.inspection,
		ExecFormatErrorMonitor: p.execFormatErrorMonitor,

		ExecFormatErrorDeleteInterval: p.execFormatErrorDeleteInterval,
	}
	if p.admissionPlacement {
		a.KnownImagesConfigMap = KnownImagesName
		if p.admissionPolicy {
			a.PlacementParameters = PlacementParametersName
		}
	}
	a.GlobalPullSecret = p.pullSecret
	if p.caBundle {
		a.RegistryCABundleFile = RegistryCADir + "/" + CABundleKey
	}
	if p.registriesConf {
		a.RegistriesConfFile = RegistriesConfDir + "/" + RegistriesConfKey
	}
	if p.mirrorSets {
		a.RegistriesConfDir = RegistriesConfDropInDir
	}
	if len(p.registryCerts) > 0 {
		a.CertsDir = CertsDir
	}
	if p.mirrorCredentials != "" {
		a.MirrorAuthFile = MirrorCredentialsDir + "/" + MirrorCredentialsFile
	}
	if p.credentialProvidersHostBinDir != "" {
		a.CredentialProviderConfigFile = CredentialProvidersDir + "/" + v1beta1.CredentialProvidersConfigKey
		a.CredentialProviderBinDir = CredentialProviderBinDir
	}
	return a
}

// The builders below return client-go's typed apply configurations: only the fields they set
// are sent, so the operator owns exactly those (server-side apply) and never a zero value it
// did not mean to set.

// owners is the controller owner reference to the ClusterPodPlacementConfig; none when unset.
func (p operandParams) owners() []*metav1ac.OwnerReferenceApplyConfiguration {
	if p.owner == nil {
		return nil
	}
	return []*metav1ac.OwnerReferenceApplyConfiguration{p.owner}
}

func serviceAccount(p operandParams, name string) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(name, p.namespace).WithLabels(ManagedLabels(name)).WithOwnerReferences(p.owners()...)
}

// policyRule is one RBAC rule on resources of the core or a named API group.
func policyRule(group string, resources, verbs []string) *rbacv1ac.PolicyRuleApplyConfiguration {
	return rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(resources...).WithVerbs(verbs...)
}

// componentSubject is the ServiceAccount of the component name, as an RBAC subject.
func componentSubject(p operandParams, name string) *rbacv1ac.SubjectApplyConfiguration {
	return rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(p.namespace).WithName(name)
}

func roleRef(kind, name string) *rbacv1ac.RoleRefApplyConfiguration {
	return rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind(kind).WithName(name)
}

// controllerClusterRole is everything the pod placement controller may do cluster-wide: read
// and patch the pods it gates, get the pods' pull secrets by name, read its configurations,
// report anomalies as Events, review its metrics clients. It may not list or watch Secrets
// anywhere (it reads the global pull secret by name too) and may not update pods (it writes one
// optimistic-locked patch).
// With the exec-format-error monitor it may also read nodes (their kubernetes.io/arch label,
// watched as metadata only). With its action DeletePod, controllerPodDeleterBinding lets it
// delete pods too.
// The webhook's roles are webhookClusterRole and webhookRole.
func controllerClusterRole(p operandParams) *rbacv1ac.ClusterRoleApplyConfiguration {
	read := []string{"get", "list", "watch"}
	role := rbacv1ac.ClusterRole(ControllerComponentName).
		WithLabels(ManagedLabels(ControllerComponentName)).WithOwnerReferences(p.owners()...).
		WithRules(
			// The controller writes the gate removal and the affinity with an optimistic-locked patch.
			policyRule("", []string{"pods"}, []string{"get", "list", "watch", "patch"}),
			// The pods' imagePullSecrets, anywhere, read one by one. The registry CA bundle
			// reaches the controller as a mounted copy, so no ConfigMap access.
			policyRule("", []string{"secrets"}, []string{"get"}),
			policyRule("", []string{"events"}, []string{"create", "patch"}),
			policyRule("events.k8s.io", []string{"events"}, []string{"create", "patch"}),
			policyRule(v1beta1.GroupName, []string{"clusterpodplacementconfigs", "podplacementconfigs"}, read),
			metricsTokenReviews(), metricsAccessReviews(),
		)
	if p.execFormatErrorMonitor {
		role.WithRules(policyRule("", []string{"nodes"}, read))
	}
	return role
}

// controllerPodDeleterBinding binds the ClusterRole ControllerPodDeleterName (pod delete,
// installed with the operator) to the controller, for the exec-format-error monitor's action
// DeletePod.
func controllerPodDeleterBinding(p operandParams) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(ControllerPodDeleterName).
		WithLabels(ManagedLabels(ControllerComponentName)).WithOwnerReferences(p.owners()...).
		WithRoleRef(roleRef("ClusterRole", ControllerPodDeleterName)).
		WithSubjects(componentSubject(p, ControllerComponentName))
}

// metricsTokenReviews and metricsAccessReviews let a component authenticate and authorize the
// clients of its HTTPS metrics endpoint (a TokenReview, then a SubjectAccessReview of "get
// /metrics"); every component, the operator included, holds both.
func metricsTokenReviews() *rbacv1ac.PolicyRuleApplyConfiguration {
	return policyRule(authenticationv1.GroupName, []string{"tokenreviews"}, []string{"create"})
}

func metricsAccessReviews() *rbacv1ac.PolicyRuleApplyConfiguration {
	return policyRule(authorizationv1.GroupName, []string{"subjectaccessreviews"}, []string{"create"})
}

// clusterRoleBinding binds the ClusterRole named name to the ServiceAccount of the same name.
func clusterRoleBinding(p operandParams, name string) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(name).
		WithLabels(ManagedLabels(name)).WithOwnerReferences(p.owners()...).
		WithRoleRef(roleRef("ClusterRole", name)).
		WithSubjects(componentSubject(p, name))
}

// controllerRole lets the controller hold its leader-election Lease in the operator's namespace
// and publish the known images and the admission policy's params (a server-side apply patch of
// the ConfigMaps the operator creates).
func controllerRole(p operandParams) *rbacv1ac.RoleApplyConfiguration {
	published := []string{KnownImagesName}
	if p.admissionPolicy {
		published = append(published, PlacementParametersName)
	}
	return rbacv1ac.Role(ControllerComponentName, p.namespace).
		WithLabels(ManagedLabels(ControllerComponentName)).WithOwnerReferences(p.owners()...).
		WithRules(
			policyRule(coordinationv1.GroupName, []string{"leases"}, []string{"get", "create", "update"}),
			policyRule("", []string{"configmaps"}, []string{"patch"}).WithResourceNames(published...),
		)
}

// webhookClusterRole lets the webhook read the placement configurations, for admission
// placement; it reads nothing else cluster-wide (no pods, no secrets), and reviews its metrics
// clients.
func webhookClusterRole(p operandParams) *rbacv1ac.ClusterRoleApplyConfiguration {
	return rbacv1ac.ClusterRole(WebhookComponentName).
		WithLabels(ManagedLabels(WebhookComponentName)).WithOwnerReferences(p.owners()...).
		WithRules(
			policyRule(v1beta1.GroupName, []string{"clusterpodplacementconfigs", "podplacementconfigs"}, []string{"get", "list", "watch"}),
			metricsTokenReviews(), metricsAccessReviews(),
		)
}

// webhookRole lets the webhook watch the known-images ConfigMap, by name.
func webhookRole(p operandParams) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(WebhookComponentName, p.namespace).
		WithLabels(ManagedLabels(WebhookComponentName)).WithOwnerReferences(p.owners()...).
		WithRules(policyRule("", []string{"configmaps"}, []string{"get", "list", "watch"}).WithResourceNames(KnownImagesName))
}

// placementParametersConfigMap is the ConfigMap of the admission policy's params, created like
// knownImagesConfigMap.
func placementParametersConfigMap(p operandParams) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(PlacementParametersName, p.namespace).
		WithLabels(ManagedLabels(ControllerComponentName)).WithOwnerReferences(p.owners()...)
}

// knownImagesConfigMap is the ConfigMap the controller publishes into; the operator creates it
// (without data, which is the controller's field and which this apply configuration does not
// claim) so that it lives and goes with the components.
func knownImagesConfigMap(p operandParams) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(KnownImagesName, p.namespace).
		WithLabels(ManagedLabels(ControllerComponentName)).WithOwnerReferences(p.owners()...)
}

// roleBinding binds the Role named name to the ServiceAccount of the same name, both in the
// operator's namespace.
func roleBinding(p operandParams, name string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(name, p.namespace).
		WithLabels(ManagedLabels(name)).WithOwnerReferences(p.owners()...).
		WithRoleRef(roleRef("Role", name)).
		WithSubjects(componentSubject(p, name))
}

func webhookService(p operandParams) *corev1ac.ServiceApplyConfiguration {
	s := corev1ac.Service(WebhookComponentName, p.namespace).
		WithLabels(ManagedLabels(WebhookComponentName)).WithOwnerReferences(p.owners()...).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(selectorLabels(WebhookComponentName)).
			WithPorts(corev1ac.ServicePort().
				WithName("webhook").WithPort(443).WithTargetPort(intstr.FromString("webhook")).WithProtocol(corev1.ProtocolTCP)))
	if a := certs.ServiceAnnotations(p.provider, WebhookServingSecretName); a != nil {
		s.WithAnnotations(a)
	}
	return s
}

// metricsService exposes the HTTPS metrics port of the component name's pods, labelled for
// the ServiceMonitors of deploy/components/monitoring. With service-ca it is annotated for
// OpenShift to write its serving certificate into secret.
func metricsService(p operandParams, name, secret string) *corev1ac.ServiceApplyConfiguration {
	labels := ManagedLabels(name)
	labels[MetricsServiceLabel] = "true"
	s := corev1ac.Service(name+"-metrics", p.namespace).
		WithLabels(labels).WithOwnerReferences(p.owners()...).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(selectorLabels(name)).
			WithPorts(corev1ac.ServicePort().
				WithName("metrics").WithPort(MetricsPort).WithTargetPort(intstr.FromString("metrics")).WithProtocol(corev1.ProtocolTCP)))
	if a := certs.ServiceAnnotations(p.provider.MetricsProvider(), secret); a != nil {
		s.WithAnnotations(a)
	}
	return s
}

// linkedCopy is the operator's copy, next to the controller, of a ConfigMap the spec
// references (CA bundle, registries.conf, per-registry certificates), which may live in
// another namespace than the pods that mount it.
func linkedCopy(p operandParams, name string, data map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(name, p.namespace).
		WithLabels(ManagedLabels(ControllerComponentName)).WithOwnerReferences(p.owners()...).
		WithData(data)
}

func selectorLabels(name string) map[string]string {
	return map[string]string{LabelName: name, LabelPartOf: PartOf}
}

func podDisruptionBudget(p operandParams, name string) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(name, p.namespace).
		WithLabels(ManagedLabels(name)).WithOwnerReferences(p.owners()...).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMinAvailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(name))))
}

func webhookDeployment(p operandParams) *appsv1ac.DeploymentApplyConfiguration {
	d := servingDeployment(p, WebhookComponentName, WebhookReplicas, p.args("webhook", p.componentArgs()), WebhookServingSecretName)
	return withMetricsCert(d, WebhookMetricsSecretName)
}

// withMetricsCert mounts the metrics serving certificate from secret at MetricsCertDir (the
// components' --metrics-cert-dir, whose files they reload when the kubelet updates them).
func withMetricsCert(d *appsv1ac.DeploymentApplyConfiguration, secret string) *appsv1ac.DeploymentApplyConfiguration {
	spec := d.Spec.Template.Spec
	spec.Containers[0].WithVolumeMounts(corev1ac.VolumeMount().WithName("metrics-cert").WithMountPath(MetricsCertDir).WithReadOnly(true))
	spec.WithVolumes(corev1ac.Volume().WithName("metrics-cert").WithSecret(corev1ac.SecretVolumeSource().WithSecretName(secret)))
	return d
}

// servingDeployment is a webhook Deployment: its serving certificate mounted from secret, a
// preStop drain.
func servingDeployment(p operandParams, name string, replicas int32, args []string, secret string) *appsv1ac.DeploymentApplyConfiguration {
	d := deployment(p, name, replicas, args)
	spec := d.Spec.Template.Spec
	c := &spec.Containers[0]
	c.Ports = append([]corev1ac.ContainerPortApplyConfiguration{
		*corev1ac.ContainerPort().WithName("webhook").WithContainerPort(WebhookPort).WithProtocol(corev1.ProtocolTCP),
	}, c.Ports...)
	c.WithVolumeMounts(corev1ac.VolumeMount().WithName("serving-cert").WithMountPath(ServingCertDir).WithReadOnly(true))
	c.WithLifecycle(corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().WithSleep(corev1ac.SleepAction().WithSeconds(WebhookDrainSeconds))))
	spec.WithTerminationGracePeriodSeconds(WebhookTerminationGraceSeconds)
	spec.WithVolumes(corev1ac.Volume().WithName("serving-cert").WithSecret(corev1ac.SecretVolumeSource().WithSecretName(secret)))
	return d
}

func controllerDeployment(p operandParams) *appsv1ac.DeploymentApplyConfiguration {
	d := withMetricsCert(deployment(p, ControllerComponentName, ControllerReplicas, p.args("controller", p.componentArgs())), ControllerMetricsSecretName)
	tmpl := d.Spec.Template
	if p.linkedHash != "" {
		tmpl.WithAnnotations(map[string]string{AnnotationLinkedObjectsHash: p.linkedHash})
	}
	mount := func(volume, configMap, dir string, items ...*corev1ac.KeyToPathApplyConfiguration) {
		tmpl.Spec.Containers[0].WithVolumeMounts(corev1ac.VolumeMount().WithName(volume).WithMountPath(dir).WithReadOnly(true))
		tmpl.Spec.WithVolumes(corev1ac.Volume().WithName(volume).WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(configMap).WithItems(items...)))
	}
	if p.caBundle {
		mount("registry-ca", RegistryCABundleName, RegistryCADir)
	}
	if p.registriesConf {
		mount("registries-conf", RegistriesConfName, RegistriesConfDir, corev1ac.KeyToPath().WithKey(RegistriesConfKey).WithPath(RegistriesConfKey))
	}
	if p.mirrorSets {
		// The same ConfigMap, its drop-in key alone: podman reads every *.conf of the directory.
		mount("mirror-sets", RegistriesConfName, RegistriesConfDropInDir, corev1ac.KeyToPath().WithKey(MirrorSetsKey).WithPath(MirrorSetsKey))
	}
	if len(p.registryCerts) > 0 {
		// certs.d layout: <host[:port]>/ca.crt for every key ("registry.example..5000").
		items := make([]*corev1ac.KeyToPathApplyConfiguration, 0, len(p.registryCerts))
		for _, k := range p.registryCerts {
			host, _ := certsDirHost(k) // validated by lookupLinked
			items = append(items, corev1ac.KeyToPath().WithKey(k).WithPath(host+"/ca.crt"))
		}
		mount("registry-certs", RegistryCertsName, CertsDir, items...)
	}
	if p.mirrorCredentials != "" {
		// Mounted directly (not copied): the Secret is in the operator's namespace, and its
		// content never passes through the operator.
		tmpl.Spec.Containers[0].WithVolumeMounts(corev1ac.VolumeMount().WithName("mirror-credentials").
			WithMountPath(MirrorCredentialsDir).WithReadOnly(true))
		tmpl.Spec.WithVolumes(corev1ac.Volume().WithName("mirror-credentials").WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(p.mirrorCredentials).WithItems(corev1ac.KeyToPath().WithKey(v1beta1.MirrorCredentialsKey).WithPath(MirrorCredentialsFile))))
	}
	if p.credentialProvidersHostBinDir != "" {
		mount("credential-providers", CredentialProvidersName, CredentialProvidersDir)
		// The plugins are the nodes' own executables (see docs/install.md): a read-only
		// hostPath, which must exist (Directory) so that a wrong path fails the pod visibly.
		tmpl.Spec.Containers[0].WithVolumeMounts(corev1ac.VolumeMount().WithName("credential-provider-bin").
			WithMountPath(CredentialProviderBinDir).WithReadOnly(true))
		tmpl.Spec.WithVolumes(corev1ac.Volume().WithName("credential-provider-bin").
			WithHostPath(corev1ac.HostPathVolumeSource().WithPath(p.credentialProvidersHostBinDir).WithType(corev1.HostPathDirectory)))
		withHostFiles(p, tmpl.Spec)
	}
	return d
}

// withHostFiles gives the controller the host files the plugins' args name
// (credentialProviders.hostFiles) at their own paths, so that the args work unchanged in its
// pod, without the controller reading the node: an init container (hostFilesContainer) copies
// each from its read-only hostPath into a memory-backed emptyDir, owned by the controller's
// user with mode 0400, and the controller mounts each copy read-only by subPath. The hostPath
// type File (not FileOrCreate) keeps a pod whose node lacks a file from starting, visibly, and
// never creates an empty file on the node. Volumes and copies are named by index: a path is no
// DNS label. The copies are made at the pod's start only.
func withHostFiles(p operandParams, spec *corev1ac.PodSpecApplyConfiguration) {
	files := p.credentialProvidersHostFiles
	if len(files) == 0 {
		return
	}
	const copies = "credential-provider-files"
	copier := hostFilesContainer(p, files).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(copies).WithMountPath(HostFilesCopyDir))
	controller := &spec.Containers[0]
	controller.SecurityContext.WithRunAsUser(ControllerUID).WithRunAsGroup(ControllerGID)
	for i, f := range files {
		name := strconv.Itoa(i)
		volume := "credential-provider-file-" + name
		copier.WithVolumeMounts(corev1ac.VolumeMount().WithName(volume).WithMountPath(HostFilesDir + "/" + name).WithReadOnly(true))
		spec.WithVolumes(corev1ac.Volume().WithName(volume).
			WithHostPath(corev1ac.HostPathVolumeSource().WithPath(f).WithType(corev1.HostPathFile)))
		controller.WithVolumeMounts(corev1ac.VolumeMount().WithName(copies).WithMountPath(f).WithSubPath(name).WithReadOnly(true))
	}
	spec.WithInitContainers(copier)
	// At most 8 files of at most hostfiles.MaxSize (64 KiB) each: 512 KiB.
	spec.WithVolumes(corev1ac.Volume().WithName(copies).WithEmptyDir(corev1ac.EmptyDirVolumeSource().
		WithMedium(corev1.StorageMediumMemory).WithSizeLimit(resource.MustParse("1Mi"))))
}

// CopyHostFilesArgs is the command line of the controller's init container for the host files
// (`archgate copy-host-files`): file i is read from HostFilesDir/i and copied to
// HostFilesCopyDir/i for the controller's user.
func CopyHostFilesArgs(files []string) []string {
	args := []string{"copy-host-files", "--from-dir=" + HostFilesDir, "--to=" + HostFilesCopyDir,
		fmt.Sprintf("--owner=%d:%d", ControllerUID, ControllerGID)}
	for i, f := range files {
		args = append(args, fmt.Sprintf("--file=%d=%s", i, f))
	}
	return args
}

// hostFilesContainer is the init container that copies the host files. It runs as root, the
// files' owner on the nodes (AKS's azure.json is root's, mode 0600), but with no capability
// other than CHOWN (to give the copies to the controller's user) and DAC_READ_SEARCH (to read
// a file of another user that root's own bits do not open), a read-only root filesystem and no
// privilege escalation; its only mounts are the listed files and the emptyDir. Its memory is
// bounded (the archgate binary peaks at about 50 MiB resident for this command), and its
// request does not add to the pod's: init containers run before the others.
func hostFilesContainer(p operandParams, files []string) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName("copy-host-files").
		WithImage(p.image).
		WithArgs(CopyHostFilesArgs(files)...).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")})).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsUser(0).WithRunAsGroup(0).WithRunAsNonRoot(false).
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL").WithAdd("CHOWN", "DAC_READ_SEARCH"))).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError)
}

// deployment is the part the two components share: restricted security context, probes,
// spreading over nodes, any architecture the (multi-arch) image supports.
func deployment(p operandParams, name string, replicas int32, args []string) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment(name, p.namespace).
		WithLabels(ManagedLabels(name)).WithOwnerReferences(p.owners()...).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(name))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(ManagedLabels(name)).
				WithAnnotations(map[string]string{"kubectl.kubernetes.io/default-container": componentOf(name)}).
				WithSpec(scheduled(p.components, corev1ac.PodSpec()).
					WithServiceAccountName(name).
					WithTerminationGracePeriodSeconds(TerminationGraceSeconds).
					WithSecurityContext(corev1ac.PodSecurityContext().
						WithRunAsNonRoot(true).
						WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
					WithAffinity(componentAffinity(name)).
					WithContainers(componentContainer(p, name, args)).
					WithVolumes(corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource())))))
}

// scheduled adds what spec.components says about where and with what priority the
// components' pods run, and which Secrets pull their image.
func scheduled(c *v1beta1.ComponentsConfig, spec *corev1ac.PodSpecApplyConfiguration) *corev1ac.PodSpecApplyConfiguration {
	if c == nil {
		return spec
	}
	for _, s := range c.ImagePullSecrets {
		spec.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s.Name))
	}
	if len(c.NodeSelector) > 0 {
		spec.WithNodeSelector(c.NodeSelector)
	}
	for _, t := range c.Tolerations {
		ac := corev1ac.Toleration().WithKey(t.Key).WithOperator(t.Operator).WithValue(t.Value).WithEffect(t.Effect)
		if t.TolerationSeconds != nil {
			ac.WithTolerationSeconds(*t.TolerationSeconds)
		}
		spec.WithTolerations(ac)
	}
	if c.PriorityClassName != "" {
		spec.WithPriorityClassName(c.PriorityClassName)
	}
	return spec
}

// resourcesOf returns the container resources spec.components sets for component (a value
// of componentOf), nil for the defaults.
func (p operandParams) resourcesOf(component string) *corev1.ResourceRequirements {
	if p.components == nil {
		return nil
	}
	switch component {
	case componentWebhook:
		return v1beta1.ResourcesOf(p.components.Webhook)
	case componentController:
		return v1beta1.ResourcesOf(p.components.Controller)
	default:
		return nil
	}
}

// componentAffinity keeps a component on Linux nodes of a supported architecture and spreads
// its replicas over nodes.
func componentAffinity(name string) *corev1ac.AffinityApplyConfiguration {
	return corev1ac.Affinity().
		WithNodeAffinity(corev1ac.NodeAffinity().WithRequiredDuringSchedulingIgnoredDuringExecution(
			corev1ac.NodeSelector().WithNodeSelectorTerms(corev1ac.NodeSelectorTerm().WithMatchExpressions(
				corev1ac.NodeSelectorRequirement().WithKey(corev1.LabelOSStable).WithOperator(corev1.NodeSelectorOpIn).WithValues("linux"),
				corev1ac.NodeSelectorRequirement().WithKey(corev1.LabelArchStable).WithOperator(corev1.NodeSelectorOpIn).WithValues(v1beta1.SupportedArchitectures()...),
			)))).
		WithPodAntiAffinity(corev1ac.PodAntiAffinity().WithPreferredDuringSchedulingIgnoredDuringExecution(
			corev1ac.WeightedPodAffinityTerm().WithWeight(100).WithPodAffinityTerm(corev1ac.PodAffinityTerm().
				WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(name))).
				WithTopologyKey(corev1.LabelHostname))))
}

// componentContainer is a component's one container: restricted, probed, bounded, its Go runtime
// sized (sizing.go).
func componentContainer(p operandParams, name string, args []string) *corev1ac.ContainerApplyConfiguration {
	env := []*corev1ac.EnvVarApplyConfiguration{corev1ac.EnvVar().WithName("POD_NAMESPACE").WithValueFrom(
		corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithAPIVersion("v1").WithFieldPath("metadata.namespace")))}
	for _, e := range p.proxyEnv {
		env = append(env, corev1ac.EnvVar().WithName(e.Name).WithValue(e.Value))
	}
	size := componentSizing(componentOf(name)).withResources(p.resourcesOf(componentOf(name)))
	env = append(env, size.runtimeEnv()...)
	probe := func(path string) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString("health")))
	}
	return corev1ac.Container().
		WithName(componentOf(name)).
		WithImage(p.image).
		WithArgs(args...).
		WithEnv(env...).
		WithPorts(
			corev1ac.ContainerPort().WithName("metrics").WithContainerPort(MetricsPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName("health").WithContainerPort(HealthPort).WithProtocol(corev1.ProtocolTCP),
		).
		WithReadinessProbe(probe("/readyz").WithPeriodSeconds(5)).
		WithLivenessProbe(probe("/healthz").WithInitialDelaySeconds(10).WithPeriodSeconds(10)).
		WithResources(size.resources()).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"))
}
