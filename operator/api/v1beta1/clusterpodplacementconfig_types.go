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
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// LogVerbosityLevel is the log level of the operand components.
// +kubebuilder:validation:Enum=Normal;Debug;Trace;TraceAll
type LogVerbosityLevel string

// Log verbosity levels, from the least to the most verbose.
const (
	LogVerbosityNormal   LogVerbosityLevel = "Normal"
	LogVerbosityDebug    LogVerbosityLevel = "Debug"
	LogVerbosityTrace    LogVerbosityLevel = "Trace"
	LogVerbosityTraceAll LogVerbosityLevel = "TraceAll"
)

// Level returns the logr verbosity (V level) of the log verbosity: 0 for Normal, 1 for Debug,
// 2 for Trace and 3 for TraceAll; unknown values map to 0.
func (l LogVerbosityLevel) Level() int {
	switch l {
	case LogVerbosityDebug:
		return 1
	case LogVerbosityTrace:
		return 2
	case LogVerbosityTraceAll:
		return 3
	default:
		return 0
	}
}

// LabelExcludeNamespace is the namespace label used by the sample namespaceSelector to opt a
// namespace out of pod placement (selector: the label DoesNotExist).
const LabelExcludeNamespace = "multiarch.openshift.io/exclude-pod-placement"

// ClusterPodPlacementConfigSpec is the configuration of the architecture-aware pod placement operand.
type ClusterPodPlacementConfigSpec struct {
	// logVerbosity is the log level of the pod placement components.
	// +optional
	// +kubebuilder:default=Normal
	LogVerbosity LogVerbosityLevel `json:"logVerbosity,omitempty"`

	// namespaceSelector selects the namespaces whose new pods get the scheduling gate. Empty or
	// unset selects every namespace. Pods in the kube-*, openshift-* and hypershift-* namespaces
	// and in the operator's own namespace are never gated, whatever the selector says.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// plugins configures the optional placement plugins, applied after the namespaced
	// PodPlacementConfigs of a pod.
	// +optional
	Plugins *Plugins `json:"plugins,omitempty"`

	// globalPullSecretRef names a Secret of type kubernetes.io/dockerconfigjson (or
	// kubernetes.io/dockercfg) whose credentials are used, together with the pod's own
	// imagePullSecrets, to inspect images; it must exist. Unset means the Secret "pull-secret" of
	// the operator's namespace, used when it exists. On OpenShift it must stay unset: the
	// cluster's global pull secret, openshift-config/pull-secret, is always used.
	// +optional
	GlobalPullSecretRef *NamespacedObjectReference `json:"globalPullSecretRef,omitempty"`

	// caBundleConfigmapRef names a ConfigMap whose "ca-bundle.crt" key holds extra PEM
	// certificates trusted when talking to registries. Unset means the system roots only.
	// +optional
	CABundleConfigmapRef *NamespacedObjectReference `json:"caBundleConfigmapRef,omitempty"`

	// registriesConfConfigmapRef names a ConfigMap whose "registries.conf" key holds a
	// registries.conf (containers-registries.conf(5), version 2: mirrors, blocked and insecure
	// registries, unqualified-search-registries and aliases for short names) for image inspection. The operator validates it before rolling out the
	// controller; a pod whose image is in a blocked registry is released at once, unplaced,
	// with an Event. Unset means no registries configuration.
	// +optional
	RegistriesConfConfigmapRef *NamespacedObjectReference `json:"registriesConfConfigmapRef,omitempty"`

	// registryCertsConfigmapRef names a ConfigMap of per-registry CA certificates (a certs.d):
	// each key is a registry host, with ".." in place of ":" before a port
	// ("registry.example..5000"), and its value the PEM certificates trusted for that registry
	// only. The operator validates every key and certificate before rolling out the controller.
	// +optional
	RegistryCertsConfigmapRef *NamespacedObjectReference `json:"registryCertsConfigmapRef,omitempty"`

	// admissionPlacement lets the webhook place a pod at admission, without the scheduling gate,
	// when the pod has no imagePullSecrets and the controller has recently inspected every one of
	// its images as it would for such a pod (anonymously, or with the global pull secret): the
	// pod gets the node affinity, labels and
	// annotations the controller would write, and costs the cluster no gate-removal write. The
	// controller publishes those images in the ConfigMap archgate-known-images of the operator's
	// namespace. Every other pod is gated as before. When another mutating webhook changes a pod
	// after archgate's (a mirror rewriter, a policy engine that rewrites images), the apiserver
	// calls archgate's webhook again, which takes its placement off and decides again on the pod
	// as it then is.
	// +optional
	// +kubebuilder:default=Enabled
	AdmissionPlacement AdmissionPlacementPolicy `json:"admissionPlacement,omitempty"`

	// admissionPolicy moves admission placement into the apiserver: when the apiserver serves
	// MutatingAdmissionPolicy (admissionregistration.k8s.io/v1) and applies it, the operator
	// renders a policy that places a pod whose images are all published, or adds the scheduling
	// gate, without calling the webhook; the controller publishes the images in the ConfigMap
	// archgate-placement-parameters of the operator's namespace. The webhook stays registered
	// for every pod the policy leaves alone, so a policy that is not applied, or fails, changes nothing for the pods.
	// Only with admissionPlacement Enabled and localPlacement Disabled. The condition
	// AdmissionPolicyInEffect says whether it is in effect, and why not. A pod the policy placed
	// whose images a later mutating webhook rewrites has that placement taken off and is gated:
	// the controller places it for the images it then runs. Disabled by default:
	// measured against the webhook, the policy costs the apiserver about what it saves the
	// webhook (docs/performance.md).
	// +optional
	// +kubebuilder:default=Disabled
	AdmissionPolicy AdmissionPolicyMode `json:"admissionPolicy,omitempty"`

	// imageInspection tunes how the pod placement controller inspects images.
	// +optional
	// +kubebuilder:default={}
	ImageInspection *ImageInspection `json:"imageInspection,omitempty"`

	// localPlacement shards the application of the PodPlacementConfigs (phase 2 of the
	// namespace-scoped configurations): when Enabled, the operator deploys, in every namespace
	// with at least one PodPlacementConfig, a local pod placement controller and webhook (with
	// namespaced RBAC only) that add and remove the local scheduling gate
	// multiarch.openshift.io/local-scheduling-gate and apply the namespace's preferences before
	// the cluster-wide controller applies the required affinity. It costs a webhook and a
	// controller process per such namespace (docs/local-placement.md); Disabled, the default,
	// lets the cluster-wide controller apply the PodPlacementConfigs itself.
	// +optional
	// +kubebuilder:default=Disabled
	LocalPlacement LocalPlacementPolicy `json:"localPlacement,omitempty"`

	// architectureTaints lists the taints the cluster keeps on the nodes of some architectures
	// (GKE taints Arm nodes kubernetes.io/arch=arm64:NoSchedule). A pod placed on a set of
	// architectures that includes a tainted one gets the matching toleration in the same write
	// as its node affinity, on every path (the controller, admission placement, the admission
	// policy), unless it already tolerates the taint; without it, the scheduler would keep the
	// pod off those nodes and a multi-architecture placement would collapse to the untainted
	// architectures. Pods whose user pinned the architecture are left alone. Empty (the
	// default): no toleration is ever added.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ArchitectureTaints []ArchitectureTaint `json:"architectureTaints,omitempty"`

	// fallbackArchitecture is where a pod goes when inspecting its images failed for good (past
	// the retry budget, an unparsable or blocked image, more images than maxImagesPerPod, or the
	// gate held past maxGateAge): its required node affinity gets kubernetes.io/arch In
	// [fallbackArchitecture] (with the architecture's toleration, see architectureTaints), the
	// pod the label multiarch.openshift.io/fallback-arch and a Warning Event. Empty (the
	// default): such a pod is released with its affinity unchanged. A user's own architecture
	// constraint is never overridden.
	// +optional
	// +kubebuilder:validation:Enum=arm64;amd64;ppc64le;s390x;""
	FallbackArchitecture string `json:"fallbackArchitecture,omitempty"`

	// placementRules decide placement from the pod itself, in CEL: "pods labelled team=ml prefer
	// arm64", "pods of the batch-* namespaces run on amd64 only". They are evaluated in order for
	// every pod placed, on every path (the controller, admission placement; the admission policy
	// leaves the pods a rule matches to the webhook). Every matching rule's requiredArchitectures
	// narrows the architectures the pod may run on; the first matching rule with
	// preferredArchitectures adds its weights, after the pod's preferred-architecture label and
	// its PodPlacementConfigs, before nodeAffinityScoring. A user's own architecture constraint is
	// never narrowed. The matched rules are recorded in the pod's annotation
	// multiarch.openshift.io/placement-rules; a rule that cannot be evaluated for a pod does not
	// match it, with a Warning Event PlacementRuleFailed. Empty (the default): no rule.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	PlacementRules []PlacementRule `json:"placementRules,omitempty"`

	// operatingSystemPlacement, when Enabled, also places pods by operating system, for clusters
	// with Linux and Windows nodes: inspection keeps the images' entries of every operating
	// system, and the pod's required node affinity gets kubernetes.io/os as well as
	// kubernetes.io/arch, one node selector term per operating system the images share, each
	// with the architectures they share on it (linux/amd64 and windows/amd64 images give
	// "os In [linux], arch In [amd64]" or "os In [windows], arch In [amd64]"). A user's own
	// kubernetes.io/os constraint is kept and narrows the choice. Admission placement and the
	// admission policy are off while it is Enabled (they know the images' Linux architectures
	// only): every pod is gated and placed by the controller. Disabled (the default): only
	// kubernetes.io/arch is constrained, from the images' Linux entries.
	// +optional
	// +kubebuilder:default=Disabled
	OperatingSystemPlacement OperatingSystemPlacementPolicy `json:"operatingSystemPlacement,omitempty"`

	// components schedules and sizes the webhook and the pod placement controller the operator
	// runs: image pull secrets, node selector, tolerations, priority class and resources. Unset
	// fields keep the defaults (docs/operations.md).
	// +optional
	Components *ComponentsConfig `json:"components,omitempty"`
}

// LocalPlacementPolicy says whether PodPlacementConfigs are applied by per-namespace components.
// +kubebuilder:validation:Enum=Enabled;Disabled
type LocalPlacementPolicy string

// Values of LocalPlacementPolicy.
const (
	LocalPlacementEnabled  LocalPlacementPolicy = "Enabled"
	LocalPlacementDisabled LocalPlacementPolicy = "Disabled"
)

// LocalPlacementEnabled reports whether per-namespace local components are deployed; unset
// means the default, Disabled.
func (s *ClusterPodPlacementConfigSpec) LocalPlacementEnabled() bool {
	return s.LocalPlacement == LocalPlacementEnabled
}

// AdmissionPlacementPolicy says whether the webhook places pods at admission.
// +kubebuilder:validation:Enum=Enabled;Disabled
type AdmissionPlacementPolicy string

// Values of AdmissionPlacementPolicy.
const (
	AdmissionPlacementEnabled  AdmissionPlacementPolicy = "Enabled"
	AdmissionPlacementDisabled AdmissionPlacementPolicy = "Disabled"
)

// AdmissionPlacementEnabled reports whether admission placement is on; unset means the default,
// Enabled. It is off while operating-system placement is on: the published images carry their
// Linux architectures only.
func (s *ClusterPodPlacementConfigSpec) AdmissionPlacementEnabled() bool {
	return s.AdmissionPlacement != AdmissionPlacementDisabled && !s.OperatingSystemPlacementEnabled()
}

// OperatingSystemPlacementPolicy says whether placement constrains kubernetes.io/os too.
// +kubebuilder:validation:Enum=Enabled;Disabled
type OperatingSystemPlacementPolicy string

// Values of OperatingSystemPlacementPolicy.
const (
	OperatingSystemPlacementEnabled  OperatingSystemPlacementPolicy = "Enabled"
	OperatingSystemPlacementDisabled OperatingSystemPlacementPolicy = "Disabled"
)

// OperatingSystemPlacementEnabled reports whether kubernetes.io/os is constrained as well; unset
// means the default, Disabled.
func (s *ClusterPodPlacementConfigSpec) OperatingSystemPlacementEnabled() bool {
	return s.OperatingSystemPlacement == OperatingSystemPlacementEnabled
}

// AdmissionPolicyMode says whether admission placement runs in the apiserver, as a
// MutatingAdmissionPolicy, where the apiserver supports it.
// +kubebuilder:validation:Enum=Enabled;Disabled
type AdmissionPolicyMode string

// Values of AdmissionPolicyMode.
const (
	AdmissionPolicyEnabled  AdmissionPolicyMode = "Enabled"
	AdmissionPolicyDisabled AdmissionPolicyMode = "Disabled"
)

// AdmissionPolicyEnabled reports whether the admission policy is wanted; unset means the
// default, Disabled.
func (s *ClusterPodPlacementConfigSpec) AdmissionPolicyEnabled() bool {
	return s.AdmissionPolicy == AdmissionPolicyEnabled
}

// NamespacedObjectReference names an object in a namespace.
type NamespacedObjectReference struct {
	// namespace of the object. Empty means the namespace the operator runs in.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="namespace must be a namespace name: lower-case letters, digits and '-', starting and ending with a letter or digit"
	Namespace string `json:"namespace,omitempty"`

	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="name must be an object name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	Name string `json:"name"`
}

// NamespacedName is the object the reference names, its namespace defaulted to
// defaultNamespace (the namespace the operator runs in); nil for a nil reference.
func (r *NamespacedObjectReference) NamespacedName(defaultNamespace string) *types.NamespacedName {
	if r == nil {
		return nil
	}
	ns := r.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	return &types.NamespacedName{Namespace: ns, Name: r.Name}
}

// Defaults and bounds of ImageInspection: the one place they are declared. The markers of
// ImageInspection repeat them for the API server (TestImageInspectionBoundsMatchCRD keeps the
// two in step); ImageInspection.Settings resolves the defaults and
// ImageInspectionSettings.Validate checks the bounds, for the operator, the controller's flags
// and the simulator alike.
const (
	// DefaultImageCacheSize is the default number of cached image inspection results.
	DefaultImageCacheSize = 4096
	// DefaultImageCacheTTL is the default lifetime of a cached result for a tag reference.
	DefaultImageCacheTTL = 10 * time.Minute
	// DefaultImageInspectionTimeout is the default deadline to inspect one image.
	DefaultImageInspectionTimeout = 30 * time.Second
	// DefaultImageInspectionMaxRetries is the default number of retries of a failed inspection.
	// With the controller's default backoff (200 ms doubling, at most 30 s) the retries wait
	// 0.2+0.4+0.8+1.6+3.2+6.4+12.8+25.6+30 s ≈ 81 s in all: a pod rides out a registry blip of a
	// minute before it is released unplaced (5 retries waited about 6 s).
	DefaultImageInspectionMaxRetries = 9

	// DefaultImageFailureCacheTTL is how long a failed inspection is remembered by default.
	DefaultImageFailureCacheTTL = 10 * time.Second
	// MaxImageFailureCacheTTL bounds failureCacheTTL (0 remembers no failure).
	MaxImageFailureCacheTTL = 5 * time.Minute

	// MaxImageCacheSize bounds cacheSize (0 disables the cache).
	MaxImageCacheSize = 1_000_000
	// MinImageCacheTTL and MaxImageCacheTTL bound cacheTTL.
	MinImageCacheTTL, MaxImageCacheTTL = time.Second, 24 * time.Hour
	// MinImageInspectionTimeout and MaxImageInspectionTimeout bound timeout.
	MinImageInspectionTimeout, MaxImageInspectionTimeout = time.Second, 5 * time.Minute
	// MaxImageInspectionMaxRetries bounds maxRetries (0 releases the pod at the first failure).
	MaxImageInspectionMaxRetries = 20

	// DefaultMaxGateAge is how long a pod may keep the scheduling gate by default. The worst
	// case of the other defaults is about 6.5 minutes (10 attempts that each time out after
	// 30 s, and 81 s of backoff between them): the age limit only catches what nothing else
	// bounds.
	DefaultMaxGateAge = 10 * time.Minute
	// MinMaxGateAge and MaxMaxGateAge bound maxGateAge.
	MinMaxGateAge, MaxMaxGateAge = time.Minute, 24 * time.Hour

	// DefaultMaxImagesPerPod is how many distinct images a pod may name for the controller to
	// inspect them; a pod naming more is released at once. Pods rarely name more than a few
	// (containers, init containers, sidecars); each image costs registry requests.
	DefaultMaxImagesPerPod = 64
	// MaxImagesPerPodLimit bounds maxImagesPerPod.
	MaxImagesPerPodLimit = 1000
	// MaxBlockedNetworks bounds blockedNetworks.
	MaxBlockedNetworks = 64
	// MaxAllowedRegistries bounds allowedRegistries.
	MaxAllowedRegistries = 256
)

// allowedRegistryPattern is what an allowedRegistries entry may be: a host (a name or an IPv4
// address) with an optional port, or "*." and a domain; the same rule as the CRD's.
var allowedRegistryPattern = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(:[0-9]{1,5})?$`)

// ImageInspection tunes image inspection by the pod placement controller.
type ImageInspection struct {
	// cacheSize is the maximum number of image inspection results kept in memory (least recently
	// used entries are evicted first). 0 disables the cache.
	// +optional
	// +kubebuilder:default=4096
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	CacheSize *int32 `json:"cacheSize,omitempty"`

	// cacheTTL is how long a cached result for a tag reference stays valid, as a Go duration
	// ("10m"), between 1s and 24h. Results for digest references never change and may be kept
	// until evicted.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="cacheTTL must be between 1s and 24h"
	CacheTTL *metav1.Duration `json:"cacheTTL,omitempty"`

	// timeout is the deadline to inspect one image, all registry requests included, as a Go
	// duration between 1s and 5m.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('5m')",message="timeout must be between 1s and 5m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// failureCacheTTL is how long a failed inspection of an image with a given set of
	// credentials is remembered and answered to every pod that asks again (their retries
	// included), as a Go duration between 0s (off) and 5m: a broken credential or a missing image
	// then costs the registry a request per image and period, not per pod and retry.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('5m')",message="failureCacheTTL must be between 0s and 5m"
	FailureCacheTTL *metav1.Duration `json:"failureCacheTTL,omitempty"`

	// maxRetries is how many times a failed inspection of a pod's images is retried, with
	// exponential backoff (200 ms doubling, at most 30 s: the default 9 retries wait about 81 s,
	// so a registry blip of a minute releases no pod unplaced), before the gate is removed
	// without changing the pod's affinity.
	// 0 removes the gate at the first failure.
	// +optional
	// +kubebuilder:default=9
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	MaxRetries *int32 `json:"maxRetries,omitempty"`

	// maxGateAge is the longest a pod keeps the scheduling gate, counted from its creation, as
	// a Go duration between 1m and 24h. A pod gated longer, whatever the reason (a registry that
	// never answers, pull secrets that cannot be read, a write another admission policy
	// refuses), is released without changing its affinity, with a Warning Event
	// GateAgeExceeded and the placement label gate-age-exceeded. The age comes from the pod, so
	// it holds across restarts of the controller.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="maxGateAge must be between 1m and 24h"
	MaxGateAge *metav1.Duration `json:"maxGateAge,omitempty"`

	// maxImagesPerPod is the most distinct images a pod may name (containers and init
	// containers) for the controller to inspect them, between 1 and 1000. A pod naming more is
	// released at once without changing its affinity, with a Warning Event InspectionFailed
	// and the placement label inspection-failed: each image costs registry requests and
	// controller time that one pod must not take from the others.
	// +optional
	// +kubebuilder:default=64
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxImagesPerPod *int32 `json:"maxImagesPerPod,omitempty"`

	// blockedNetworks are the networks (CIDRs) the controller never connects to while it
	// inspects images: image references are the tenants' to write, so they decide which hosts
	// archgate calls. A registry host whose address lies in one is refused, and the pods naming
	// it are released at once without changing their affinity, with the reason. Unset or empty
	// means loopback and link-local: 127.0.0.0/8, ::1/128, 169.254.0.0/16 (the cloud's instance
	// metadata service), fe80::/10. A list replaces those: keep the link-local ones, and add the
	// cluster's pod and service networks when no registry runs inside the cluster.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c))",message="blockedNetworks must be CIDRs such as 10.0.0.0/8 or fd00::/8"
	BlockedNetworks []string `json:"blockedNetworks,omitempty"`

	// allowedRegistries, when set, are the only registries whose images the controller
	// inspects, as pods name them (the registry part of the image reference, docker.io for
	// "nginx"): "quay.io", "registry.example.com:5000", or "*.example.com" for every host under
	// example.com, any port. A pod naming an image of another registry is released at once
	// without changing its affinity, with the reason; mirrors that registries.conf gives an
	// allowed registry are reached as usual. Unset or empty allows every registry.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(:[0-9]{1,5})?$`
	AllowedRegistries []string `json:"allowedRegistries,omitempty"`

	// credentialProviders gives the controller the kubelet's credential provider plugins
	// (ecr-credential-provider on EKS, the GCP and Azure providers on GKE and AKS, ...): images
	// that nodes pull with a plugin's credentials are inspected with the same credentials, tried
	// after the global pull secret. Unset means no plugins.
	// +optional
	CredentialProviders *CredentialProviders `json:"credentialProviders,omitempty"`

	// mirrorCredentialsSecretRef names a Secret of type kubernetes.io/dockerconfigjson, in the
	// operator's namespace, whose credentials are used only for the registry mirrors that
	// registriesConfConfigmapRef redirects inspections to, by the mirror's host (and path), as a
	// container runtime uses its node-wide auth file for mirrors. The pods' own imagePullSecrets
	// and the global pull secret are never sent to a mirror on another host. Unset means mirrors
	// are read anonymously.
	// +optional
	MirrorCredentialsSecretRef *LocalSecretReference `json:"mirrorCredentialsSecretRef,omitempty"`
}

// CredentialProvidersConfigKey is the key of the CredentialProviderConfig in the ConfigMap
// named by credentialProviders.configConfigmapRef.
const CredentialProvidersConfigKey = "config.yaml"

// CredentialProviders configures the kubelet credential provider plugins of image inspection.
type CredentialProviders struct {
	// configConfigmapRef names a ConfigMap whose "config.yaml" key holds a kubelet
	// CredentialProviderConfig (kubelet.config.k8s.io/v1), usually a copy of the nodes' own
	// (the file given to the kubelet's --image-credential-provider-config). The operator
	// validates it before rolling out the controller. Service-account-token plugins
	// (tokenAttributes) are not supported.
	// +required
	ConfigConfigmapRef NamespacedObjectReference `json:"configConfigmapRef"`

	// hostBinDir is the directory, on the nodes' hosts, of the plugin executables (the
	// kubelet's --image-credential-provider-bin-dir, e.g. /etc/eks/image-credential-provider on
	// EKS). It is mounted read-only into the controller's pods as a hostPath volume: the
	// executables the nodes run, built for the node's architecture, with the node's cloud
	// identity available as it is to the kubelet (instance metadata, or the controller's own
	// workload identity).
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/`
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(e, e == '..')",message="hostBinDir must be an absolute path without '..' elements"
	HostBinDir string `json:"hostBinDir"`

	// hostFiles are files of the nodes' hosts that the plugins read, as their args name them
	// (e.g. /etc/kubernetes/azure.json for AKS's acr-credential-provider). At the start of each
	// controller pod, an init container running as root with no capabilities but CHOWN and
	// DAC_READ_SEARCH copies each file (at most 64 KiB, no symbolic link) from a read-only
	// hostPath volume of type File into a memory-backed emptyDir, readable by the controller's
	// user only, which the controller mounts read-only at the same path: root-only files work,
	// and the controller stays non-root without capabilities. A file missing on a node keeps
	// the controller's pod there from starting instead of leaving an empty file behind. A file
	// changed on the node is seen at the controller pods' next start. Paths under the
	// controller's own directories, /proc, /sys, /dev and /var/run/secrets, and the files the
	// kubelet provides (/etc/hosts, /etc/hostname, /etc/resolv.conf) are refused.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	HostFiles []HostFilePath `json:"hostFiles,omitempty"`
}

// The reserved list of the last rule is ReservedHostPaths, which TestHostFilesAvoidOwnMounts
// keeps in step with the directories the components mount.

// HostFilePath is the absolute, clean path of a file on the nodes' hosts.
// +kubebuilder:validation:MinLength=2
// +kubebuilder:validation:MaxLength=4096
// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",messageExpression="'host file ' + self + ' must be an absolute path'"
// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(e, e == '..')",messageExpression="'host file ' + self + ' must not have .. elements'"
// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(e, e == '.') && !self.contains('//') && !self.endsWith('/')",messageExpression="'host file ' + self + ' must be a clean path naming a file: no . elements, no //, no trailing /'"
// +kubebuilder:validation:XValidation:rule="!['/etc/archgate', '/var/lib/archgate', '/var/run/archgate', '/run/archgate', '/tmp', '/proc', '/sys', '/dev', '/var/run/secrets', '/run/secrets', '/etc/hosts', '/etc/hostname', '/etc/resolv.conf'].exists(d, self == d || self.startsWith(d + '/'))",messageExpression="'host file ' + self + ' is reserved: it must not be under the directories of the controller (/etc/archgate, /var/lib/archgate, /var/run/archgate, /run/archgate, /tmp), /proc, /sys, /dev, /var/run/secrets or /run/secrets, nor be a file the kubelet provides (/etc/hosts, /etc/hostname, /etc/resolv.conf)'"
type HostFilePath string

// ReservedHostPaths are the paths a credentialProviders.hostFiles entry may neither equal nor
// lie under: the controller's own mount directories (a host file there would shadow or be
// shadowed by them; /run/... too, as /var/run links to /run in most images), the kernel's
// pseudo-filesystems, the ServiceAccount token's directory, and the files the kubelet mounts
// into every container. HostFilePath's last rule lists them.
func ReservedHostPaths() []string {
	return []string{"/etc/archgate", "/var/lib/archgate", "/var/run/archgate", "/run/archgate", "/tmp", "/proc", "/sys", "/dev",
		"/var/run/secrets", "/run/secrets", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}
}

// ImageInspectionSettings is ImageInspection with every default resolved, in Go types: the one
// settings type of image inspection. The operator resolves it from the ClusterPodPlacementConfig
// and renders it into the controller's arguments; the controller validates it and uses it as
// is (zero means zero: no cache, no retry).
type ImageInspectionSettings struct {
	// CacheSize is the maximum number of cached results; 0 disables the cache.
	CacheSize int
	// CacheTTL is the lifetime of a cached result for a tag reference.
	CacheTTL time.Duration
	// Timeout is the deadline to inspect one image.
	Timeout time.Duration
	// MaxRetries is the number of retries before the gate is removed without changes.
	MaxRetries int
	// FailureCacheTTL is how long a failed inspection is remembered; 0 remembers none.
	FailureCacheTTL time.Duration
	// MaxGateAge is the longest a pod keeps the scheduling gate.
	MaxGateAge time.Duration
	// MaxImagesPerPod is the most distinct images of a pod the controller inspects.
	MaxImagesPerPod int
	// BlockedNetworks are the CIDRs no registry connection may reach.
	BlockedNetworks []string
	// AllowedRegistries are the only registries inspected; empty allows every one.
	AllowedRegistries []string
}

// DefaultBlockedNetworks returns the networks blocked when blockedNetworks is unset: loopback
// and link-local.
func DefaultBlockedNetworks() []string {
	return []string{"127.0.0.0/8", "::1/128", "169.254.0.0/16", "fe80::/10"}
}

// DefaultImageInspectionSettings returns the settings of an unset spec.imageInspection.
func DefaultImageInspectionSettings() ImageInspectionSettings {
	return (*ImageInspection)(nil).Settings()
}

// Settings returns the settings with the defaults applied to unset fields; it accepts a nil receiver.
func (in *ImageInspection) Settings() ImageInspectionSettings {
	s := ImageInspectionSettings{
		CacheSize:  DefaultImageCacheSize,
		CacheTTL:   DefaultImageCacheTTL,
		Timeout:    DefaultImageInspectionTimeout,
		MaxRetries: DefaultImageInspectionMaxRetries,

		FailureCacheTTL: DefaultImageFailureCacheTTL,
		MaxGateAge:      DefaultMaxGateAge,
		MaxImagesPerPod: DefaultMaxImagesPerPod,
		BlockedNetworks: DefaultBlockedNetworks(),
	}
	if in == nil {
		return s
	}
	if in.CacheSize != nil {
		s.CacheSize = int(*in.CacheSize)
	}
	if in.CacheTTL != nil {
		s.CacheTTL = in.CacheTTL.Duration
	}
	if in.Timeout != nil {
		s.Timeout = in.Timeout.Duration
	}
	if in.MaxRetries != nil {
		s.MaxRetries = int(*in.MaxRetries)
	}
	if in.FailureCacheTTL != nil {
		s.FailureCacheTTL = in.FailureCacheTTL.Duration
	}
	if in.MaxGateAge != nil {
		s.MaxGateAge = in.MaxGateAge.Duration
	}
	if in.MaxImagesPerPod != nil {
		s.MaxImagesPerPod = int(*in.MaxImagesPerPod)
	}
	if len(in.BlockedNetworks) > 0 {
		s.BlockedNetworks = slices.Clone(in.BlockedNetworks)
	}
	s.AllowedRegistries = slices.Clone(in.AllowedRegistries)
	return s
}

// Validate checks every setting against the API's bounds; the errors name the field under path
// (for example spec.imageInspection) and the value.
func (s ImageInspectionSettings) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.CacheSize < 0 || s.CacheSize > MaxImageCacheSize {
		errs = append(errs, field.Invalid(path.Child("cacheSize"), s.CacheSize, fmt.Sprintf("must be within [0, %d]", MaxImageCacheSize)))
	}
	if s.CacheTTL < MinImageCacheTTL || s.CacheTTL > MaxImageCacheTTL {
		errs = append(errs, field.Invalid(path.Child("cacheTTL"), s.CacheTTL.String(), fmt.Sprintf("must be within [%s, %s]", MinImageCacheTTL, MaxImageCacheTTL)))
	}
	if s.Timeout < MinImageInspectionTimeout || s.Timeout > MaxImageInspectionTimeout {
		errs = append(errs, field.Invalid(path.Child("timeout"), s.Timeout.String(), fmt.Sprintf("must be within [%s, %s]", MinImageInspectionTimeout, MaxImageInspectionTimeout)))
	}
	if s.FailureCacheTTL < 0 || s.FailureCacheTTL > MaxImageFailureCacheTTL {
		errs = append(errs, field.Invalid(path.Child("failureCacheTTL"), s.FailureCacheTTL.String(), fmt.Sprintf("must be within [0s, %s]", MaxImageFailureCacheTTL)))
	}
	if s.MaxRetries < 0 || s.MaxRetries > MaxImageInspectionMaxRetries {
		errs = append(errs, field.Invalid(path.Child("maxRetries"), s.MaxRetries, fmt.Sprintf("must be within [0, %d]", MaxImageInspectionMaxRetries)))
	}
	if s.MaxGateAge < MinMaxGateAge || s.MaxGateAge > MaxMaxGateAge {
		errs = append(errs, field.Invalid(path.Child("maxGateAge"), s.MaxGateAge.String(), fmt.Sprintf("must be within [%s, %s]", MinMaxGateAge, MaxMaxGateAge)))
	}
	if s.MaxImagesPerPod < 1 || s.MaxImagesPerPod > MaxImagesPerPodLimit {
		errs = append(errs, field.Invalid(path.Child("maxImagesPerPod"), s.MaxImagesPerPod, fmt.Sprintf("must be within [1, %d]", MaxImagesPerPodLimit)))
	}
	if len(s.BlockedNetworks) > MaxBlockedNetworks {
		errs = append(errs, field.TooMany(path.Child("blockedNetworks"), len(s.BlockedNetworks), MaxBlockedNetworks))
	}
	for i, c := range s.BlockedNetworks {
		if _, err := netip.ParsePrefix(c); err != nil {
			errs = append(errs, field.Invalid(path.Child("blockedNetworks").Index(i), c, "must be a CIDR such as 10.0.0.0/8 or fd00::/8"))
		}
	}
	if len(s.AllowedRegistries) > MaxAllowedRegistries {
		errs = append(errs, field.TooMany(path.Child("allowedRegistries"), len(s.AllowedRegistries), MaxAllowedRegistries))
	}
	for i, r := range s.AllowedRegistries {
		if len(r) > 253 || !allowedRegistryPattern.MatchString(r) {
			errs = append(errs, field.Invalid(path.Child("allowedRegistries").Index(i), r,
				"must be a registry host with an optional port (quay.io, registry.example.com:5000) or *. and a domain"))
		}
	}
	return errs
}

// ClusterPodPlacementConfigStatus is the observed state of the ClusterPodPlacementConfig.
type ClusterPodPlacementConfigStatus struct {
	// conditions are the latest observations of the operand's state; see the ConditionXxx types.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the metadata.generation that the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// operatorVersion is the archgate version of the operator that wrote this status; the
	// webhook and the pod placement controller it runs use the same image.
	// +optional
	OperatorVersion string `json:"operatorVersion,omitempty"`
}

// ClusterPodPlacementConfig configures and enables the architecture-aware pod placement operand.
// It is a cluster-scoped singleton named "cluster": creating it deploys the webhook and the pod
// placement controller, deleting it releases the gated pods and removes them.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clusterpodplacementconfigs,scope=Cluster,shortName=cppc
// +kubebuilder:printcolumn:name=Available,JSONPath=`.status.conditions[?(@.type=="Available")].status`,type=string
// +kubebuilder:printcolumn:name=Progressing,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`,type=string
// +kubebuilder:printcolumn:name=Degraded,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`,type=string
// +kubebuilder:printcolumn:name=Version,JSONPath=`.status.operatorVersion`,type=string,priority=1
// +kubebuilder:printcolumn:name=Age,JSONPath=`.metadata.creationTimestamp`,type=date
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="ClusterPodPlacementConfig is a singleton, .metadata.name must be 'cluster'"
type ClusterPodPlacementConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired configuration of the operand.
	// +optional
	// +kubebuilder:default={}
	Spec ClusterPodPlacementConfigSpec `json:"spec,omitempty"`
	// status is the observed state of the operand.
	// +optional
	Status ClusterPodPlacementConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterPodPlacementConfigList is a list of ClusterPodPlacementConfig.
type ClusterPodPlacementConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPodPlacementConfig `json:"items"`
}
