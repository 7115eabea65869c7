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
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/pkg/settings"
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
	// WebhookTerminationGraceSeconds outlasts the drain by the server's own graceful shutdown.
	WebhookTerminationGraceSeconds = WebhookDrainSeconds + 20
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
	// pullSecret names the global pull secret, nil when none is configured.
	pullSecret *types.NamespacedName
	// caBundle is set when a registry CA bundle is configured (and copied to RegistryCABundleName).
	caBundle bool
	// registriesConf is set when a registries.conf is configured (copied to RegistriesConfName);
	// registryCerts lists the keys of the per-registry certificates (copied to RegistryCertsName).
	registriesConf bool
	registryCerts  []string
	// proxyEnv is the operator's HTTP_PROXY, HTTPS_PROXY and NO_PROXY (and lowercase) variables,
	// passed on to the components.
	proxyEnv []corev1.EnvVar
	// linkedHash identifies the versions of the linked objects (see linkedState.hash).
	linkedHash string
	// provider issues the webhook's serving certificate.
	provider certs.Provider
	// args build the components' command lines.
	args ArgsFunc
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
	// GlobalPullSecret is "<namespace>/<name>" of the global pull secret, or "".
	GlobalPullSecret string
	// RegistryCABundleFile is the path of the mounted registry CA bundle, or "".
	RegistryCABundleFile string
	// RegistriesConfFile is the path of the mounted registries.conf, or "".
	RegistriesConfFile string
	// CertsDir is the mounted certs.d directory, or "".
	CertsDir string
	// ImageInspection is the ClusterPodPlacementConfig's spec.imageInspection, resolved; nil
	// leaves the controller's flags at the API's defaults.
	ImageInspection *v1beta1.ImageInspectionSettings
}

// DefaultArgs is the command line of the archgate binary's `webhook` and `controller`
// subcommands (cmd/archgate checks that every flag exists).
func DefaultArgs(component string, a ComponentArgs) []string {
	verbosity := a.LogVerbosity
	if verbosity == "" {
		verbosity = v1beta1.LogVerbosityNormal
	}
	args := []string{
		component,
		"--log-verbosity=" + string(verbosity),
		"--operator-namespace=" + a.Namespace,
		"--metrics-bind-address=" + a.MetricsBindAddress,
		"--health-probe-bind-address=" + a.HealthProbeBindAddress,
	}
	switch component {
	case "webhook":
		args = append(args, "--cert-dir="+a.CertDir, fmt.Sprintf("--port=%d", a.WebhookPort))
	case "controller":
		args = append(args, "--leader-elect")
		if a.GlobalPullSecret != "" {
			args = append(args, "--global-pull-secret="+a.GlobalPullSecret)
		}
		if a.RegistryCABundleFile != "" {
			args = append(args, "--ca-bundle="+a.RegistryCABundleFile)
		}
		if a.RegistriesConfFile != "" {
			args = append(args, "--registries-conf="+a.RegistriesConfFile)
		}
		if a.CertsDir != "" {
			args = append(args, "--certs-dir="+a.CertsDir)
		}
		if a.ImageInspection != nil {
			args = append(args, settings.ImageInspectionArgs(*a.ImageInspection)...)
		}
	}
	return args
}

func (p operandParams) componentArgs() ComponentArgs {
	a := ComponentArgs{
		Namespace:              p.namespace,
		LogVerbosity:           p.verbosity,
		CertDir:                ServingCertDir,
		WebhookPort:            WebhookPort,
		MetricsBindAddress:     fmt.Sprintf(":%d", MetricsPort),
		HealthProbeBindAddress: fmt.Sprintf(":%d", HealthPort),
		ImageInspection:        p.inspection,
	}
	if p.pullSecret != nil {
		a.GlobalPullSecret = p.pullSecret.String()
	}
	if p.caBundle {
		a.RegistryCABundleFile = RegistryCADir + "/" + CABundleKey
	}
	if p.registriesConf {
		a.RegistriesConfFile = RegistriesConfDir + "/" + RegistriesConfKey
	}
	if len(p.registryCerts) > 0 {
		a.CertsDir = CertsDir
	}
	return a
}

func objectMeta(namespace, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: ManagedLabels(component)}
}

func serviceAccount(p operandParams, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: objectMeta(p.namespace, name, name)}
}

// controllerClusterRole is everything the pod placement controller may do cluster-wide: read
// and patch the pods it gates, get the pods' pull secrets by name, read its configurations,
// report anomalies as Events. It may not list or watch Secrets anywhere (see
// controllerPullSecretRole) and may not update pods (it writes one optimistic-locked patch).
// The webhook gets no role at all: it never talks to the apiserver.
func controllerClusterRole(p operandParams) *rbacv1.ClusterRole {
	read := []string{"get", "list", "watch"}
	return &rbacv1.ClusterRole{
		ObjectMeta: objectMeta("", ControllerComponentName, ControllerComponentName),
		Rules: []rbacv1.PolicyRule{
			// The controller writes the gate removal and the affinity with an optimistic-locked patch.
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
			// The pods' imagePullSecrets, anywhere, read one by one. The registry CA bundle
			// reaches the controller as a mounted copy, so no ConfigMap access.
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{v1beta1.GroupName}, Resources: []string{"clusterpodplacementconfigs", "podplacementconfigs"}, Verbs: read},
		},
	}
}

// controllerPullSecretRole lets the controller list and watch the global pull secret, and
// nothing else: it lives in the secret's namespace and names the secret (the controller's
// cache selects it with a metadata.name field selector, which the apiserver authorizes as a
// request for that name). Nil without a global pull secret.
func controllerPullSecretRole(p operandParams) *rbacv1.Role {
	if p.pullSecret == nil {
		return nil
	}
	return &rbacv1.Role{
		ObjectMeta: objectMeta(p.pullSecret.Namespace, ControllerPullSecretRoleName, ControllerComponentName),
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{p.pullSecret.Name},
			Verbs: []string{"get", "list", "watch"},
		}},
	}
}

// controllerPullSecretRoleBinding binds controllerPullSecretRole; nil without a global pull secret.
func controllerPullSecretRoleBinding(p operandParams) *rbacv1.RoleBinding {
	if p.pullSecret == nil {
		return nil
	}
	return &rbacv1.RoleBinding{
		ObjectMeta: objectMeta(p.pullSecret.Namespace, ControllerPullSecretRoleName, ControllerComponentName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ControllerPullSecretRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: p.namespace, Name: ControllerComponentName}},
	}
}

func controllerClusterRoleBinding(p operandParams) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: objectMeta("", ControllerComponentName, ControllerComponentName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ControllerComponentName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: p.namespace, Name: ControllerComponentName}},
	}
}

// controllerRole lets the controller hold its leader-election Lease in the operator's namespace.
func controllerRole(p operandParams) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: objectMeta(p.namespace, ControllerComponentName, ControllerComponentName),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		},
	}
}

func controllerRoleBinding(p operandParams) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: objectMeta(p.namespace, ControllerComponentName, ControllerComponentName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ControllerComponentName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: p.namespace, Name: ControllerComponentName}},
	}
}

func webhookService(p operandParams) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: objectMeta(p.namespace, WebhookComponentName, WebhookComponentName),
		Spec: corev1.ServiceSpec{
			Selector: selectorLabels(WebhookComponentName),
			Ports: []corev1.ServicePort{{
				Name: "webhook", Port: 443, TargetPort: intstr.FromString("webhook"), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
	s.Annotations = certs.ServiceAnnotations(p.provider, WebhookServingSecretName)
	return s
}

// linkedCopy is the operator's copy, next to the controller, of a ConfigMap the spec
// references (CA bundle, registries.conf, per-registry certificates), which may live in
// another namespace than the pods that mount it.
func linkedCopy(p operandParams, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: objectMeta(p.namespace, name, ControllerComponentName),
		Data:       data,
	}
}

func selectorLabels(name string) map[string]string {
	return map[string]string{LabelName: name, LabelPartOf: PartOf}
}

func podDisruptionBudget(p operandParams, name string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(p.namespace, name, name),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: selectorLabels(name)},
		},
	}
}

func webhookDeployment(p operandParams) *appsv1.Deployment {
	d := deployment(p, WebhookComponentName, WebhookReplicas, p.args("webhook", p.componentArgs()))
	spec := &d.Spec.Template.Spec
	c := &spec.Containers[0]
	c.Ports = append([]corev1.ContainerPort{{Name: "webhook", ContainerPort: WebhookPort, Protocol: corev1.ProtocolTCP}}, c.Ports...)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "serving-cert", MountPath: ServingCertDir, ReadOnly: true})
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: WebhookDrainSeconds}}}
	spec.TerminationGracePeriodSeconds = ptr.To[int64](WebhookTerminationGraceSeconds)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "serving-cert", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: WebhookServingSecretName},
	}})
	return d
}

func controllerDeployment(p operandParams) *appsv1.Deployment {
	d := deployment(p, ControllerComponentName, ControllerReplicas, p.args("controller", p.componentArgs()))
	tmpl := &d.Spec.Template
	if p.linkedHash != "" {
		tmpl.Annotations[AnnotationLinkedObjectsHash] = p.linkedHash
	}
	mount := func(volume, configMap, dir string, items []corev1.KeyToPath) {
		c := &tmpl.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Items: items},
		}})
	}
	if p.caBundle {
		mount("registry-ca", RegistryCABundleName, RegistryCADir, nil)
	}
	if p.registriesConf {
		mount("registries-conf", RegistriesConfName, RegistriesConfDir, nil)
	}
	if len(p.registryCerts) > 0 {
		// certs.d layout: <host[:port]>/ca.crt for every key ("registry.example..5000").
		items := make([]corev1.KeyToPath, 0, len(p.registryCerts))
		for _, k := range p.registryCerts {
			host, _ := certsDirHost(k) // validated by lookupLinked
			items = append(items, corev1.KeyToPath{Key: k, Path: host + "/ca.crt"})
		}
		mount("registry-certs", RegistryCertsName, CertsDir, items)
	}
	return d
}

// deployment is the part the two components share: restricted security context, probes,
// spreading over nodes, any architecture the (multi-arch) image supports.
func deployment(p operandParams, name string, replicas int32, args []string) *appsv1.Deployment {
	labels := ManagedLabels(name)
	return &appsv1.Deployment{
		ObjectMeta: objectMeta(p.namespace, name, name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      maps.Clone(labels),
					Annotations: map[string]string{"kubectl.kubernetes.io/default-container": componentOf(name)},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName: name,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Affinity: &corev1.Affinity{
						NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
							NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
								{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
								{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: v1beta1.SupportedArchitectures()},
							}}},
						}},
						PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
							Weight: 100,
							PodAffinityTerm: corev1.PodAffinityTerm{
								LabelSelector: &metav1.LabelSelector{MatchLabels: selectorLabels(name)},
								TopologyKey:   corev1.LabelHostname,
							},
						}}},
					},
					Containers: []corev1.Container{{
						Name:  componentOf(name),
						Image: p.image,
						Args:  args,
						Env: append([]corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
						}}}, p.proxyEnv...),
						Ports: []corev1.ContainerPort{
							{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
							{Name: "health", ContainerPort: HealthPort, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}},
							PeriodSeconds: 5,
						},
						LivenessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("health")}},
							InitialDelaySeconds: 10,
							PeriodSeconds:       10,
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						VolumeMounts:             []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}
