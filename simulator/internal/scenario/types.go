// Package scenario defines the simulator's scenario files: what to generate
// (nodes, registry catalog, operator configuration, workload, timeline) and,
// kept apart, what must hold (expectations). Files are decoded strictly:
// unknown fields, duplicate keys, wrong types and bad values are errors that
// name the file, the line and the field path.
package scenario

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Scenario is one scenario file.
type Scenario struct {
	// Name identifies the scenario; reports are written under reports/<name>/.
	Name string `json:"name"`
	// Description says what the scenario exercises.
	Description string `json:"description,omitempty"`
	// Seed drives every random choice of the workload (images, shares).
	Seed uint64 `json:"seed"`
	// Baseline adds a pass of the same workload with the operator off, so the
	// report can state ratios to the scheduler alone.
	Baseline bool `json:"baseline,omitempty"`
	// HandwrittenBaseline adds a pass with the operator off in which every
	// pod carries, from its creation, the required kubernetes.io/arch
	// affinity its images need (from the catalog) and the preferred terms
	// of the cluster's nodeAffinityScoring: what a careful user writes by
	// hand. The scheduler pays for that affinity as it pays for
	// archgate's, so the main pass divided by this one is what archgate
	// itself costs, apart from the cost of the constraint.
	HandwrittenBaseline bool `json:"handwrittenBaseline,omitempty"`
	// HandwrittenViaWebhook makes the handwritten pass add each pod's
	// affinity at admission, through a minimal mutating webhook in the
	// harness registered as archgate's is (simulator/internal/floorwebhook),
	// instead of at creation. That webhook already knows every answer, so
	// the main pass divided by this one is what archgate costs beyond what
	// any admission-webhook design pays. Needs handwrittenBaseline.
	HandwrittenViaWebhook bool `json:"handwrittenViaWebhook,omitempty"`
	// HandwrittenViaPolicy makes the handwritten pass add each pod's affinity
	// at admission through a minimal MutatingAdmissionPolicy registered as
	// archgate's is (simulator/internal/floorpolicy): each pod arrives with its
	// answer in an annotation that the policy turns into the affinity and
	// removes. The main pass divided by this one is what archgate costs beyond
	// what any admission-policy design pays. Needs handwrittenBaseline; not
	// with handwrittenViaWebhook.
	HandwrittenViaPolicy bool `json:"handwrittenViaPolicy,omitempty"`
	// FloorBaseline adds a pass of its own, "floor", in which the handwritten
	// affinity is added at admission by the simulator's minimal webhook
	// (webhook) or policy (policy), as handwrittenViaWebhook and
	// handwrittenViaPolicy add it, or by the floor policy writing archgate's
	// whole placement (policy-placement), while the handwritten pass keeps the
	// affinity written at creation. One run then measures archgate, the floor
	// of its admission design and the constraint written by hand on one
	// machine at one speed: floorRatio.* divide the main pass by the floor.
	// Not with handwrittenViaWebhook or handwrittenViaPolicy.
	FloorBaseline Floor `json:"floorBaseline,omitempty"`
	// FloorGate makes the floor pass also gate, as any placement that holds a pod until its
	// images are known must, every pod naming an image not read yet (a pod whose
	// nodeSelector pins its architecture aside), and release it with one write once the
	// registry's latency model has drawn the time of that image's minimum requests (its
	// manifest, and the config of a single-platform one), counted from the moment the first
	// pod naming it exists, its create answered (simulator/internal/floorgate). The floor is then the whole of a
	// gate-based admission design: floorRatio.* are what archgate costs beyond holding the
	// first pods of each image for the registry. Needs floorBaseline.
	FloorGate bool `json:"floorGate,omitempty"`
	// Deadline bounds each pass, from its first pod creation to the last pod
	// bound; pods not bound by then are reported as unbound. Default 10m.
	Deadline Duration `json:"deadline,omitempty"`
	// Scheduler tunes the embedded kube-scheduler.
	Scheduler SchedulerSpec `json:"scheduler,omitempty"`
	// ControlPlane says how much of a cluster's control plane the simulated
	// one runs beside the apiserver and the scheduler; an existing cluster
	// (--kubeconfig) runs its own, so it applies to the simulated one only.
	ControlPlane ControlPlaneSpec `json:"controlPlane,omitempty"`
	// Background is a deterministic load that shares the machine with the
	// run, so the report shows how each pass degrades on a shared machine.
	Background *BackgroundSpec `json:"background,omitempty"`
	// Nodes are the node pools of the simulated cluster.
	Nodes []NodePoolSpec `json:"nodes"`
	// Kubelet says what the fake nodes report about the pods bound to them.
	Kubelet KubeletSpec `json:"kubelet,omitempty"`
	// Registry is the fake registry the pods' images live in.
	Registry RegistrySpec `json:"registry"`
	// Operator configures the operator running in-process.
	Operator OperatorSpec `json:"operator"`
	// Workload is the pods to create and how fast.
	Workload WorkloadSpec `json:"workload"`
	// Attacker is a hostile tenant that creates pods in a namespace of its
	// own during the main pass, besides the workload; the workload's
	// figures are then those of the tenants it attacks.
	Attacker *AttackerSpec `json:"attacker,omitempty"`
	// Timeline lists disturbances at offsets from the start of the main pass.
	Timeline []Event `json:"timeline,omitempty"`
	// Expectations are what must hold; a missed one fails the run. They are
	// kept apart from what the scenario generates (see Expectation).
	Expectations []Expectation `json:"expectations,omitempty"`
	// Headroom is what the machine must give a pass for its figures to be
	// judged: CPU to spare for latencies and rates, a steady speed for the
	// ratios between passes. Without it a check measures the machine, not
	// the system under test: it fails as "not judged" with the reason
	// named, instead of as the product's failure.
	Headroom *HeadroomSpec `json:"headroom,omitempty"`
}

// HeadroomSpec bounds the machine conditions under which figures are judged.
type HeadroomSpec struct {
	// MaxUtilization is the highest share of the machine's CPU (all cores,
	// every process, other work included) a pass may use for its latency
	// and rate checks to be judged, within (0, 1]; 0 judges at any load.
	MaxUtilization float64 `json:"maxUtilization,omitempty"`
	// MaxSpeedChange is the largest relative difference in machine speed
	// (calibration) between two passes a ratio check compares, within
	// (0, 1); 0 compares passes at any speed. A host that slowed between
	// the passes scales every process's CPU time and latency alike, so
	// their ratio then measures the host.
	MaxSpeedChange float64 `json:"maxSpeedChange,omitempty"`
	// MaxHarnessChange is the largest relative difference in the harness's CPU
	// per pod between two passes a latency or rate ratio compares, within
	// (0, 1); 0 compares them whatever it was. At a fixed arrival rate the
	// harness does the same work in every pass, so its CPU is the machine's
	// speed during the pass, memory included; the calibration reads it before
	// the pass, in the CPU's caches, and misses a host that slows once the
	// pass runs.
	MaxHarnessChange float64 `json:"maxHarnessChange,omitempty"`
}

// ControlPlaneSpec brings the simulated control plane closer to a cluster's, at the cost a
// cluster pays: by default the apiserver runs lean (no ServiceAccount admission, no priority
// and fairness, high in-flight limits) and no controller manager watches what the run creates.
type ControlPlaneSpec struct {
	// ControllerManager runs the real kube-controller-manager (make cluster-components builds
	// it): its informers watch the pods, events and namespaces the run creates, its garbage
	// collector and pod controllers handle them, and it shares the machine with the apiserver,
	// as on a cluster's control-plane node. Off are the controllers whose work the simulator
	// does itself or that fake nodes cannot serve: node lifecycle (the fake nodes renew no
	// lease), deployment, replicaset, endpoints and endpointslice (the simulator's kubelet
	// rolls out archgate's Deployments and writes their EndpointSlices).
	ControllerManager bool `json:"controllerManager,omitempty"`
	// ClusterDefaults runs the apiserver with a cluster's defaults: the ServiceAccount
	// admission plugin (every pod gets its namespace's default ServiceAccount and the
	// projected token volume, so pods are as large as a cluster's), priority and fairness, and
	// the default in-flight limits. Needs controllerManager, whose serviceaccount controller
	// creates each namespace's default ServiceAccount; the run waits for it before creating
	// pods.
	ClusterDefaults bool `json:"clusterDefaults,omitempty"`
}

// SchedulerSpec tunes the embedded scheduler.
type SchedulerSpec struct {
	// PercentageOfNodesToScore overrides the scheduler's adaptive default (1-100).
	PercentageOfNodesToScore int32 `json:"percentageOfNodesToScore,omitempty"`
	// DisableEvents drops the scheduler's per-pod Events (a real scheduler writes them).
	DisableEvents bool `json:"disableEvents,omitempty"`
}

// NodePoolSpec is a group of identical nodes of one architecture.
type NodePoolSpec struct {
	// Name prefixes the node names; default <arch>.
	Name string `json:"name,omitempty"`
	// Count is the number of nodes.
	Count int `json:"count"`
	// Arch is the kubernetes.io/arch label: amd64, arm64, ppc64le or s390x.
	Arch string `json:"arch"`
	// OS is the kubernetes.io/os label: linux (the default) or windows.
	OS string `json:"os,omitempty"`
	// Allocatable is each node's capacity; defaults 32 CPUs, 128Gi, 110 pods.
	Allocatable AllocatableSpec `json:"allocatable,omitempty"`
	// Taints are put on every node of the pool, as a cloud provider taints
	// a node pool (GKE: kubernetes.io/arch=arm64:NoSchedule on Arm nodes).
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// KubeletSpec is what the fake nodes' kubelets report. Without it nothing
// runs on the nodes and bound pods keep an empty status.
type KubeletSpec struct {
	// ExecFormatErrors makes a node report, for each pod bound to it whose
	// images lack the node's architecture, the status a real kubelet writes
	// after runc failed to exec the entrypoint: every container in
	// CrashLoopBackOff, its last run terminated with exit code 1 and
	// "exec /app: exec format error" (terminationMessagePolicy
	// FallbackToLogsOnError). One status write per misplaced pod.
	ExecFormatErrors bool `json:"execFormatErrors,omitempty"`
	// RunPods makes a node report every other pod bound to it running (phase
	// Running, Ready), as a real kubelet does once the containers start: one
	// status write per pod, which the apiserver and every pod watcher
	// (archgate's controller among them) pay for. On an existing cluster,
	// kwok's pod-ready stage does it.
	RunPods bool `json:"runPods,omitempty"`
}

// AllocatableSpec is a node's allocatable resources.
type AllocatableSpec struct {
	// CPU in cores or millicores ("32", "500m").
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Memory in bytes ("128Gi").
	Memory *resource.Quantity `json:"memory,omitempty"`
	// Pods is the maximum number of pods.
	Pods int64 `json:"pods,omitempty"`
}

// RegistrySpec describes the fake registry: its content, faults and auth.
type RegistrySpec struct {
	// Catalog is the registry content, inline, in fakeregistry's catalog
	// format (repositories written out and/or generated images).
	Catalog *fakeregistry.CatalogSpec `json:"catalog,omitempty"`
	// CatalogFile is a fakeregistry catalog file, relative to the scenario
	// file; exclusive with Catalog.
	CatalogFile string `json:"catalogFile,omitempty"`
	// TLS serves HTTPS with a generated CA the operator is given as a certs.d
	// directory; default true.
	TLS *bool `json:"tls,omitempty"`
	// Latency delays requests by kind (ping, token, manifest_get,
	// manifest_head, blob_get, blob_head, manifest_delete, blob_delete, other, or "*" for the rest).
	Latency map[string]LatencySpec `json:"latency,omitempty"`
	// Errors injects error answers for the whole run.
	Errors *ErrorRatesSpec `json:"errors,omitempty"`
	// Auth protects the registry.
	Auth *AuthSpec `json:"auth,omitempty"`
}

// LatencySpec is one latency distribution: fixed, uniform (min, max) or
// log-normal (p50, p99).
type LatencySpec struct {
	// Fixed delays every request by this much.
	Fixed *Duration `json:"fixed,omitempty"`
	// Min and Max bound a uniform distribution.
	Min *Duration `json:"min,omitempty"`
	Max *Duration `json:"max,omitempty"`
	// P50 and P99 define a log-normal distribution.
	P50 *Duration `json:"p50,omitempty"`
	P99 *Duration `json:"p99,omitempty"`
}

// ErrorRatesSpec injects error answers.
type ErrorRatesSpec struct {
	// ServerErrorRate is the probability (0..1) of a 500 answer.
	ServerErrorRate float64 `json:"serverErrorRate,omitempty"`
	// TooManyRequestsRate is the probability (0..1) of a 429 answer.
	TooManyRequestsRate float64 `json:"tooManyRequestsRate,omitempty"`
	// RetryAfter is sent with 429 answers.
	RetryAfter Duration `json:"retryAfter,omitempty"`
	// HangRate is the probability (0..1) of never answering.
	HangRate float64 `json:"hangRate,omitempty"`
	// Kinds limits the rates to these request kinds; empty means all.
	Kinds []string `json:"kinds,omitempty"`
}

// AuthSpec protects the registry. The simulator creates one user that may
// pull every repository; pods reach it through imagePullSecrets
// (workload.pullSecretShare) or the global pull secret
// (operator.globalPullSecret).
type AuthSpec struct {
	// Mode is basic or bearer.
	Mode string `json:"mode"`
	// Anonymous are repository patterns anyone may pull ("gen/**", "library/*").
	Anonymous []string `json:"anonymous,omitempty"`
}

// OperatorSpec configures the operator.
type OperatorSpec struct {
	// Enabled runs the webhook and the pod placement controller. Off, the
	// main pass measures the scheduler alone.
	Enabled bool `json:"enabled"`
	// Mode is how they run: operator (default) runs `archgate operator`,
	// configured only through what a cluster admin writes (the
	// ClusterPodPlacementConfig, Secrets, ConfigMaps), and starts each
	// component from the Deployment the operator renders (package kubelet);
	// direct, a debugging aid, starts the webhook and the controller itself
	// with settings no cluster can give them (workers, inspectWorkers, qps,
	// burst, retry delays, controllerReplicas).
	Mode OperatorMode `json:"mode,omitempty"`
	// FailOpenGracePeriod is the operator's --fail-open-grace-period, set on
	// its command line as deploy/ sets its Deployment's args (mode operator);
	// 0 keeps the operator's default (60 s).
	FailOpenGracePeriod Duration `json:"failOpenGracePeriod,omitempty"`
	// Namespace is the operator's namespace; default archgate-system.
	Namespace string `json:"namespace,omitempty"`
	// Workers is the number of concurrent pod reconciles; 0 keeps the
	// operator's default.
	Workers int `json:"workers,omitempty"`
	// InspectWorkers bounds concurrent image inspections; 0 keeps the default.
	InspectWorkers int `json:"inspectWorkers,omitempty"`
	// ControllerReplicas is 1 (default) or 2: two controller processes with
	// --leader-elect on a real Lease, as the operator deploys a warm standby.
	ControllerReplicas int `json:"controllerReplicas,omitempty"`
	// QPS and Burst are the operator's client rate limits; 0 keeps the defaults.
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// RetryBaseDelay and RetryMaxDelay bound the backoff between failed
	// inspections of a pod; 0 keeps the defaults.
	RetryBaseDelay Duration `json:"retryBaseDelay,omitempty"`
	RetryMaxDelay  Duration `json:"retryMaxDelay,omitempty"`
	// GlobalPullSecret creates a pull secret for the registry's user in the
	// operator namespace and points the cluster config at it.
	GlobalPullSecret bool `json:"globalPullSecret,omitempty"`
	// ClusterConfig is the ClusterPodPlacementConfig spec, as users write it
	// (plugins.nodeAffinityScoring, imageInspection.cacheSize/cacheTTL/
	// timeout/maxRetries, namespaceSelector). globalPullSecretRef and
	// caBundleConfigmapRef are set by the simulator.
	ClusterConfig v1beta1.ClusterPodPlacementConfigSpec `json:"clusterConfig,omitempty"`
	// PodPlacementConfigs are created in the workload namespaces.
	PodPlacementConfigs []PodPlacementConfigSpec `json:"podPlacementConfigs,omitempty"`
}

// OperatorMode is how the simulator runs the operator's components.
type OperatorMode string

// Operator modes.
const (
	// OperatorModeOperator runs the operator and the components it renders.
	OperatorModeOperator OperatorMode = "operator"
	// OperatorModeDirect starts the components with the scenario's settings.
	OperatorModeDirect OperatorMode = "direct"
)

// PodPlacementConfigSpec is a PodPlacementConfig created in some of the
// workload namespaces.
type PodPlacementConfigSpec struct {
	// Name of the PodPlacementConfig.
	Name string `json:"name"`
	// Namespaces is how many workload namespaces (the first ones) get it; 0
	// means all.
	Namespaces int `json:"namespaces,omitempty"`
	// Spec is the PodPlacementConfig spec, as users write it.
	Spec v1beta1.PodPlacementConfigSpec `json:"spec"`
}

// WorkloadSpec is the pods to create.
type WorkloadSpec struct {
	// Namespaces spreads the pods round-robin over this many namespaces; default 1.
	Namespaces int `json:"namespaces,omitempty"`
	// Pods is the number of pods of each pass.
	Pods int `json:"pods"`
	// Containers and InitContainers per pod, drawn uniformly from [min, max];
	// defaults 1..1 and 0..0.
	Containers     *IntRange `json:"containers,omitempty"`
	InitContainers *IntRange `json:"initContainers,omitempty"`
	// Images chooses the image of each container.
	Images ImageChoiceSpec `json:"images,omitempty"`
	// OwnArchAffinityShare is the share (0..1) of pods that carry their own
	// required node affinity on kubernetes.io/arch (one compatible architecture).
	OwnArchAffinityShare float64 `json:"ownArchAffinityShare,omitempty"`
	// NodeSelectorShare is the share (0..1) of pods that pin
	// kubernetes.io/arch with a nodeSelector (the webhook skips them).
	NodeSelectorShare float64 `json:"nodeSelectorShare,omitempty"`
	// PullSecretShare is the share (0..1) of pods with an imagePullSecret for
	// the registry's user.
	PullSecretShare float64 `json:"pullSecretShare,omitempty"`
	// Requests are each container's resource requests; defaults 10m CPU, 16Mi.
	Requests RequestsSpec `json:"requests,omitempty"`
	// Arrival is the pace of pod creation.
	Arrival ArrivalSpec `json:"arrival"`
}

// AttackerSpec is a hostile tenant: pods in one namespace of its own,
// created at a steady rate from the main pass's first create, each of one
// kind of attack drawn by weight.
type AttackerSpec struct {
	// Pods is how many pods the attacker creates.
	Pods int `json:"pods"`
	// Rate is the attacker's pods per second.
	Rate float64 `json:"rate"`
	// Attacks are the kinds of pod the attacker creates.
	Attacks []AttackSpec `json:"attacks"`
	// Tarpit is how the registry answers for images: tarpit.
	Tarpit *TarpitSpec `json:"tarpit,omitempty"`
}

// AttackImages says where an attack pod's images are.
type AttackImages string

// Where attack pods' images are.
const (
	// AttackImagesHang: a host of the attacker's that accepts connections
	// and never answers.
	AttackImagesHang AttackImages = "hang"
	// AttackImagesTarpit: a repository of the registry that answers every
	// tag with a large index sent slowly (AttackerSpec.Tarpit).
	AttackImagesTarpit AttackImages = "tarpit"
	// AttackImagesMissing: tags the registry does not have.
	AttackImagesMissing AttackImages = "missing"
	// AttackImagesCatalog: the workload's own images (for pods whose attack
	// is their size, not their images).
	AttackImagesCatalog AttackImages = "catalog"
)

// AttackSpec is one kind of attack pod.
type AttackSpec struct {
	// Weight is the kind's share of the attacker's pods, relative to the others.
	Weight float64 `json:"weight"`
	// Images says where each container's image is. Except with catalog,
	// every container names a tag of its own, so no cache helps.
	Images AttackImages `json:"images"`
	// Containers per pod; default 1, at most MaxAttackContainers.
	Containers int `json:"containers,omitempty"`
	// AnnotationBytes adds an annotation of this many bytes to each pod
	// (the apiserver refuses more than 256 KiB of annotations in all).
	AnnotationBytes int `json:"annotationBytes,omitempty"`
}

// TarpitSpec is the registry's answer to the attacker's tarpit images.
type TarpitSpec struct {
	// Size is the index's size; default 4Mi.
	Size *resource.Quantity `json:"size,omitempty"`
	// BytesPerSecond is the pace of the answer; default 256Ki.
	BytesPerSecond *resource.Quantity `json:"bytesPerSecond,omitempty"`
}

// IntRange is an inclusive integer range.
type IntRange struct {
	// Min is the smallest value.
	Min int `json:"min"`
	// Max is the largest value.
	Max int `json:"max"`
}

// Popularity names how often each image is used.
type Popularity string

// Popularity distributions.
const (
	// PopularityUniform draws every image equally often.
	PopularityUniform Popularity = "uniform"
	// PopularityZipf draws image k (catalog order) with weight 1/(k+1)^s.
	PopularityZipf Popularity = "zipf"
	// PopularityUnique gives every container an image not used before
	// (cold cache); the catalog must hold enough images.
	PopularityUnique Popularity = "unique"
)

// ImageChoiceSpec chooses container images from the catalog.
type ImageChoiceSpec struct {
	// Popularity is uniform (default), zipf or unique.
	Popularity Popularity `json:"popularity,omitempty"`
	// ZipfS is the zipf exponent, > 1; default 1.1.
	ZipfS float64 `json:"zipfS,omitempty"`
	// DigestShare is the share (0..1) of image references pinned by digest.
	DigestShare float64 `json:"digestShare,omitempty"`
	// AllowIncompatible lets a pod's images share no architecture; by default
	// a pod's images are drawn so that they share one a node pool has.
	AllowIncompatible bool `json:"allowIncompatible,omitempty"`
}

// RequestsSpec is a container's resource requests.
type RequestsSpec struct {
	// CPU request ("10m").
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Memory request ("16Mi").
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// ArrivalMode names how pods arrive.
type ArrivalMode string

// Arrival modes.
const (
	// ArrivalBurst creates every pod as fast as the creators can: it measures
	// throughput (latency then is mostly queueing).
	ArrivalBurst ArrivalMode = "burst"
	// ArrivalRate creates pods at a fixed rate: it measures latency.
	ArrivalRate ArrivalMode = "rate"
	// ArrivalSteps creates pods at a rate that changes in steps.
	ArrivalSteps ArrivalMode = "steps"
)

// ArrivalSpec is the pace of pod creation.
type ArrivalSpec struct {
	// Mode is burst, rate or steps.
	Mode ArrivalMode `json:"mode"`
	// Rate is pods per second (mode rate).
	Rate float64 `json:"rate,omitempty"`
	// Steps are consecutive rates (mode steps); the last one lasts until
	// every pod is created.
	Steps []StepSpec `json:"steps,omitempty"`
	// Concurrency bounds the create requests in flight; default 32.
	Concurrency int `json:"concurrency,omitempty"`
	// SustainLatency is the total-latency p99 a step must keep to count as
	// sustained (mode steps); default 1s. The report's sustainedRate is the
	// highest step rate reached before the first step that misses it.
	SustainLatency *Duration `json:"sustainLatency,omitempty"`
}

// BackgroundSpec is a busy loop run beside the scenario for its whole run.
type BackgroundSpec struct {
	// CPUShare is the share of one core the loop keeps busy, in (0, 1]: it
	// spins for that share of every 10 ms period and sleeps the rest,
	// pinned to the first CPU.
	CPUShare float64 `json:"cpuShare"`
}

// StepSpec is one step of a steps arrival.
type StepSpec struct {
	// Rate is pods per second during the step.
	Rate float64 `json:"rate"`
	// Duration of the step.
	Duration Duration `json:"duration"`
	// WarmUp marks a step that only warms caches and connections: it is
	// reported but does not count for or against the sustained rate.
	WarmUp bool `json:"warmUp,omitempty"`
}

// Event is one disturbance of the timeline: exactly one action is set.
type Event struct {
	// At is the offset from the start of the main pass.
	At Duration `json:"at"`
	// RegistryOutage makes every registry request fail for a while.
	RegistryOutage *OutageEvent `json:"registryOutage,omitempty"`
	// RegistrySlowdown adds latency to every registry request for a while.
	RegistrySlowdown *SlowdownEvent `json:"registrySlowdown,omitempty"`
	// RegistryErrors injects error answers for a while.
	RegistryErrors *ErrorsEvent `json:"registryErrors,omitempty"`
	// ImagesDeleted deletes images from the registry, as their owner deletes
	// them from a real one.
	ImagesDeleted *ImagesDeletedEvent `json:"imagesDeleted,omitempty"`
	// ControllerRestart stops the pod placement controller and starts it again.
	ControllerRestart *RestartEvent `json:"controllerRestart,omitempty"`
	// WebhookDown stops the webhook server for a while (the configuration
	// stays, so the apiserver's calls fail and its failure policy applies).
	// In mode operator, the webhook Deployment's pods stop running (as pods
	// that crash-loop), and the operator reacts as in a cluster.
	WebhookDown *WindowEvent `json:"webhookDown,omitempty"`
	// ControllerDown stops the controller Deployment's pods for a while, as
	// pods that crash-loop or cannot be pulled (mode operator): once it has
	// been down for its fail-open grace the operator removes the webhook
	// registration, and registers it again when the controller is back.
	ControllerDown *WindowEvent `json:"controllerDown,omitempty"`
	// ClusterConfigDeleted deletes the ClusterPodPlacementConfig and
	// optionally recreates it.
	ClusterConfigDeleted *ConfigDeletedEvent `json:"clusterConfigDeleted,omitempty"`
	// ClusterConfigChanged replaces the ClusterPodPlacementConfig's spec, as
	// an admin edits it (mode operator); a change the operator renders into
	// the components' arguments (logVerbosity, admissionPlacement,
	// imageInspection) rolls their Deployments.
	ClusterConfigChanged *ConfigChangedEvent `json:"clusterConfigChanged,omitempty"`
}

// OutageEvent is a registry outage.
type OutageEvent struct {
	// Duration of the outage.
	Duration Duration `json:"duration"`
	// Mode is unavailable (every request 503, default) or reset (connections
	// aborted).
	Mode string `json:"mode,omitempty"`
}

// SlowdownEvent is a window of extra registry latency.
type SlowdownEvent struct {
	// Duration of the slowdown.
	Duration Duration `json:"duration"`
	// Latency applies to every request kind during the window.
	Latency LatencySpec `json:"latency"`
}

// ErrorsEvent is a window of registry error answers.
type ErrorsEvent struct {
	// Duration of the window.
	Duration Duration `json:"duration"`
	// Rates are the error rates during the window.
	Rates ErrorRatesSpec `json:"rates"`
}

// ImagesDeletedEvent deletes the first Count catalog images (in catalog
// order) whose repository starts with Prefix: each image's manifest and every
// tag naming it answer 404 from then on. Pods go on naming them.
type ImagesDeletedEvent struct {
	// Prefix selects the images by repository.
	Prefix string `json:"prefix"`
	// Count is how many of them are deleted, at least 1.
	Count int `json:"count"`
}

// RestartEvent restarts a component.
type RestartEvent struct {
	// Downtime between stop and start; 0 starts again at once. With a
	// standby (operator.controllerReplicas 2) it counts from the standby's
	// takeover, and the stopped instance comes back as the new standby. In
	// operator mode the kubelet ends the leading replica and starts its
	// replacement after Downtime, counted from the stop.
	Downtime Duration `json:"downtime,omitempty"`
	// Mode is graceful (SIGTERM: the leader releases its lease on the way
	// out) or crash (SIGKILL: nothing released, a standby waits the lease
	// out); default graceful.
	Mode string `json:"mode,omitempty"`
}

// Restart modes of a controllerRestart event.
const (
	RestartGraceful = "graceful"
	RestartCrash    = "crash"
)

// WindowEvent is a window during which something is off.
type WindowEvent struct {
	// Duration of the window.
	Duration Duration `json:"duration"`
}

// ConfigChangedEvent is the ClusterPodPlacementConfig's new spec.
type ConfigChangedEvent struct {
	// Spec replaces operator.clusterConfig from then on (the references the
	// simulator sets stay).
	Spec v1beta1.ClusterPodPlacementConfigSpec `json:"spec"`
}

// ConfigDeletedEvent deletes the ClusterPodPlacementConfig.
type ConfigDeletedEvent struct {
	// RecreateAfter recreates it after this long; 0 never does.
	RecreateAfter Duration `json:"recreateAfter,omitempty"`
}

// Expectation is one thing that must hold after the run, e.g.
// "gateHold.p99 < 200ms". Source says where the number comes from (a
// measurement, an SLO, a design figure): a threshold without one is rejected.
type Expectation struct {
	// Check is "<metric> <op> <value>"; see the Metrics list.
	Check string `json:"check"`
	// Source says where the threshold comes from.
	Source string `json:"source"`
	// Goal is the value the product aims for, when the check is a guard set
	// looser than that (the machine's noise, a target not reached yet): a
	// value in the metric's unit, compared with the check's operator. The
	// report shows it beside the guard and whether it was met; only the
	// check decides the verdict.
	Goal string `json:"goal,omitempty"`
}

// Floor names a minimal admission that adds the handwritten affinity: the floor of an
// admission design, which already knows every answer.
type Floor string

// The floors.
const (
	// FloorNone: no floor.
	FloorNone Floor = ""
	// FloorWebhook is the minimal mutating webhook (simulator/internal/floorwebhook).
	FloorWebhook Floor = "webhook"
	// FloorPolicy is the minimal MutatingAdmissionPolicy (simulator/internal/floorpolicy).
	FloorPolicy Floor = "policy"
	// FloorPolicyPlacement is the floor policy writing archgate's whole placement of a pod it
	// places from the same answer: the required affinity, the preferred terms of the cluster's
	// nodeAffinityScoring, and archgate's labels and annotations (floorpolicy.Options.Placement).
	FloorPolicyPlacement Floor = "policy-placement"
)

// Floors are the floors a scenario can name.
func Floors() []Floor { return []Floor{FloorWebhook, FloorPolicy, FloorPolicyPlacement} }

// IsPolicy reports whether f is one of the floor policies, whose pods carry their answer.
func (f Floor) IsPolicy() bool { return f == FloorPolicy || f == FloorPolicyPlacement }

// HandwrittenFloor is the floor through which the handwritten pass adds its affinity
// (handwrittenViaWebhook, handwrittenViaPolicy), FloorNone when it writes it at creation.
func (s *Scenario) HandwrittenFloor() Floor {
	switch {
	case s.HandwrittenViaWebhook:
		return FloorWebhook
	case s.HandwrittenViaPolicy:
		return FloorPolicy
	}
	return FloorNone
}
