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

package podplacement

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/internal/placementconfig"
	"github.com/archgate/archgate/operator/internal/placementrules"
)

// Names of the controllers, as they appear in controller-runtime's logs and metrics.
const (
	PodControllerName = "podplacement"
	// EventRecorderName is the reportingController of the Events the controller records.
	EventRecorderName = "archgate-pod-placement"
)

// Defaults of Options, applied by withDefaults to zero fields. Workers, InspectWorkers and the
// retry delays have none here: they are the controller's flags, whose defaults (package
// cmdline) pkg/components applies.
const (
	DefaultPullSecretCacheSize = 1024
	// DefaultPullSecretCacheTTL bounds how long a rotated imagePullSecret can be served stale.
	DefaultPullSecretCacheTTL = 10 * time.Second
	// conflictRequeueDelay is the retry after a write lost an optimistic-concurrency race; the
	// newer pod version is normally delivered by the watch before that anyway.
	conflictRequeueDelay = 100 * time.Millisecond
)

// Options configure the pod placement controller. Zero fields take the defaults above, but
// Workers, InspectWorkers, RetryBaseDelay and RetryMaxDelay, which are required.
type Options struct {
	// Inspector answers which architectures an image supports (an inspect.CachingInspector over
	// an inspect.RegistryInspector in production). Required.
	Inspector inspect.Inspector
	// Invalidator drops cached results when the global pull secret changes; nil when Inspector
	// caches nothing.
	Invalidator Invalidator
	// GlobalPullSecret names the cluster-wide pull secret; nil means none. It is read by name,
	// again every 10 s at most while pods are placed.
	GlobalPullSecret *types.NamespacedName
	// NodeCredentials gives the credentials of the kubelet's credential provider plugins
	// (credprovider.Provider), tried after the global pull secret; nil means none.
	NodeCredentials NodeCredentials
	// ShortNames returns the references to inspect, in order, for an image as a pod names it
	// (inspect.ShortNames.Candidates: registries.conf's aliases and unqualified-search-registries
	// for short names such as "nginx"); nil inspects the image as named (docker.io for short
	// names).
	ShortNames func(image string) ([]string, error)
	// Workers is the number of pods reconciled concurrently.
	Workers int
	// NamespaceWorkers bounds the pods of one namespace reconciled concurrently, so that one
	// namespace whose registries hang cannot hold every worker; a quarter of Workers (at least
	// one) when zero.
	NamespaceWorkers int
	// InspectWorkers bounds the images of one pod inspected concurrently.
	InspectWorkers int
	// InspectTimeout bounds the inspection of one image; a pod's deadline is this times the
	// number of rounds of InspectWorkers images it needs. The default is the API's
	// (v1beta1.DefaultImageInspectionTimeout); the operator passes spec.imageInspection.timeout.
	InspectTimeout time.Duration
	// MaxRetries is the retry budget, spec.imageInspection.maxRetries as the operator renders it
	// into the controller's arguments (a change of the ClusterPodPlacementConfig rolls the
	// controller); zero or negative means no retry.
	MaxRetries int
	// MaxGateAge is the longest a pod keeps the gate, from its creation, whatever holds it:
	// spec.imageInspection.maxGateAge as the operator renders it. The default is the API's.
	MaxGateAge time.Duration
	// MaxImagesPerPod is the most distinct images of a pod inspected; a pod naming more is
	// released at once: spec.imageInspection.maxImagesPerPod as the operator renders it. The
	// default is the API's.
	MaxImagesPerPod int
	// RetryBaseDelay and RetryMaxDelay shape the per-pod exponential backoff.
	RetryBaseDelay, RetryMaxDelay time.Duration
	// PullSecretCacheSize and PullSecretCacheTTL bound the cache of parsed imagePullSecrets.
	PullSecretCacheSize int
	PullSecretCacheTTL  time.Duration
	// Metrics receives the controller's metrics; fresh, unregistered ones when nil.
	Metrics *Metrics
	// Rules evaluates the ClusterPodPlacementConfig's placement rules (compiled programs
	// cached by expression); a new placementrules.Evaluator when nil.
	Rules *placementrules.Evaluator
	// OverlapEvents records overlap Events on skipped placement configurations; nil starts one
	// writing through the manager's config, at most one Event per configuration per
	// OverlapEventInterval (DefaultOverlapEventInterval when zero).
	OverlapEvents        *OverlapEvents
	OverlapEventInterval time.Duration
	// Client, APIReader and Recorder default to the manager's client, API reader and an
	// events.k8s.io recorder named EventRecorderName. Tests set them.
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Clock drives the backoff; the real clock when nil. Tests set a fake one.
	Clock clock.Clock
}

func (o Options) withDefaults() Options {
	o.NamespaceWorkers = min(cmp.Or(max(o.NamespaceWorkers, 0), max(o.Workers/4, 1)), o.Workers)
	o.InspectTimeout = cmp.Or(max(o.InspectTimeout, 0), v1beta1.DefaultImageInspectionTimeout)
	o.MaxRetries = max(o.MaxRetries, 0)
	o.MaxGateAge = cmp.Or(max(o.MaxGateAge, 0), v1beta1.DefaultMaxGateAge)
	o.MaxImagesPerPod = cmp.Or(max(o.MaxImagesPerPod, 0), v1beta1.DefaultMaxImagesPerPod)
	o.RetryMaxDelay = max(o.RetryMaxDelay, o.RetryBaseDelay)
	o.PullSecretCacheSize = cmp.Or(max(o.PullSecretCacheSize, 0), DefaultPullSecretCacheSize)
	o.PullSecretCacheTTL = cmp.Or(max(o.PullSecretCacheTTL, 0), DefaultPullSecretCacheTTL)
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	if o.Rules == nil {
		o.Rules = placementrules.New(placementrules.Options{})
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// CacheOptions returns the manager cache configuration the controller needs: the metadata of the
// pods with the gated label (the controller watches pods as metadata only, see Reconcile),
// managed fields stripped. Placement configurations are cached whole (there are few); Secrets
// never (ClientOptions).
func CacheOptions() cache.Options {
	byObject := map[client.Object]cache.ByObject{
		&corev1.Pod{}: {
			Label:     labels.SelectorFromSet(labels.Set{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}),
			Transform: transformPod,
		},
	}
	return cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
}

// ClientOptions returns the manager client configuration: secrets are never read through the
// cache (which would otherwise start an informer on every secret of the cluster).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}

// Reconciler is the pod placement controller.
type Reconciler struct {
	opts   Options
	client client.Client
	// pods reads the pod of each reconcile from the apiserver: the cache holds metadata only.
	pods     client.Reader
	recorder events.EventRecorder
	metrics  *Metrics
	retries  *retryTracker
	tenants  *tenantSlots
	// cached reads the gated pods' metadata (Stalled); lastRelease is when a pod last left the
	// gate, in Unix nanoseconds.
	cached      client.Reader
	lastRelease atomic.Int64
	secrets     *podSecrets
	// busy spaces the rounds of a pod whose registries were all busy (see judgeInspection).
	busy   workqueue.TypedRateLimiter[types.UID]
	global *globalPullSecret // nil without a global pull secret
	// overlaps records overlap Events; nil records none (unit tests without it).
	overlaps *OverlapEvents
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns the controller; SetupWithManager registers it.
func New(opts Options) (*Reconciler, error) {
	if opts.Inspector == nil {
		return nil, errors.New("podplacement: Options.Inspector is required")
	}
	if opts.Workers <= 0 || opts.InspectWorkers <= 0 || opts.RetryBaseDelay <= 0 || opts.RetryMaxDelay <= 0 {
		return nil, fmt.Errorf("podplacement: Options.Workers (%d), InspectWorkers (%d), RetryBaseDelay (%v) and RetryMaxDelay (%v) must be positive",
			opts.Workers, opts.InspectWorkers, opts.RetryBaseDelay, opts.RetryMaxDelay)
	}
	opts = opts.withDefaults()
	r := &Reconciler{
		opts:     opts,
		metrics:  opts.Metrics,
		retries:  newRetryTracker(opts.RetryBaseDelay, opts.RetryMaxDelay, opts.Clock),
		tenants:  newTenantSlots(opts.NamespaceWorkers),
		busy:     workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](busyWait, maxBusyWait),
		overlaps: opts.OverlapEvents,
	}
	r.released() // a new controller has StallGrace before it can be stalled
	return r, nil
}

// SetupWithManager registers the pod controller with mgr, whose cache must be configured by
// CacheOptions.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	c, apiReader, recorder := r.opts.Client, r.opts.APIReader, r.opts.Recorder
	if c == nil {
		c = mgr.GetClient()
	}
	if apiReader == nil {
		apiReader = mgr.GetAPIReader()
	}
	if recorder == nil {
		recorder = mgr.GetEventRecorder(EventRecorderName)
	}
	if r.overlaps == nil {
		o, err := newOverlapEventsFor(mgr.GetConfig(), OverlapEventsOptions{Interval: r.opts.OverlapEventInterval, Scheme: mgr.GetScheme()})
		if err != nil {
			return err
		}
		if err := mgr.Add(o); err != nil {
			o.Stop()
			return fmt.Errorf("adding the overlap Events recorder: %w", err)
		}
		r.overlaps = o
	}
	r.bind(c, apiReader, mgr.GetCache(), recorder)

	// Controller-name uniqueness follows the manager's options (relaxed only for a component
	// restarted in one process, see components.Common.Restartable).
	if err := startConfigInformers(mgr.GetCache()); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named(PodControllerName).
		Watches(podMetadata(), podEventHandler{forget: r.forget}, builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Workers}).
		Complete(r); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", PodControllerName, err)
	}
	return nil
}

// startConfigInformers registers the informers of the placement configurations, which the
// phases read through the cache, so that they start with the manager and its readiness waits
// for their sync. Started lazily, by the first reconcile, they made the first gated pods wait
// for a LIST and a WATCH on a loaded apiserver: 12 and 17 ms on average over the 163 gated
// pods of a 2,000-pod run for two cache reads. Without the CRDs (not installed yet) they stay
// lazy, as loadConfig expects.
func startConfigInformers(c cache.Cache) error {
	for _, obj := range []client.Object{&v1beta1.ClusterPodPlacementConfig{}, &v1beta1.PodPlacementConfig{}} {
		if _, err := c.GetInformer(context.Background(), obj, cache.BlockUntilSynced(false)); err != nil && !meta.IsNoMatchError(err) {
			return fmt.Errorf("registering the informer of %T: %w", obj, err)
		}
	}
	return nil
}

// bind sets what the reconciler talks to: c for configurations (cached) and writes, apiReader for
// the pod of each reconcile and imagePullSecrets (uncached), cached for the global pull secret and
// the gated-pods gauges.
func (r *Reconciler) bind(c client.Client, apiReader, cached client.Reader, recorder events.EventRecorder) {
	r.client, r.pods, r.recorder, r.cached = c, apiReader, recorder, cached
	r.secrets = newPodSecrets(apiReader, r.opts.PullSecretCacheSize, r.opts.PullSecretCacheTTL)
	r.metrics.gated.attach(cached, r.opts.Clock.Now)
	if r.opts.GlobalPullSecret != nil {
		r.global = &globalPullSecret{key: *r.opts.GlobalPullSecret, reader: apiReader, invalidator: r.opts.Invalidator, clock: r.opts.Clock}
	}
}

// podEventHandler enqueues gated pods (with controller-runtime's handler, which keeps the
// priority queue's low priority for the initial list) and forgets the backoff state of pods
// that leave the cache: deleted, or ungated (their label no longer matches the cache selector).
// It sees metadata only: the labels say which stage a pod is in, Reconcile reads its spec.
type podEventHandler struct {
	forget func(types.UID)
}

var _ handler.EventHandler = podEventHandler{}

var enqueue = &handler.EnqueueRequestForObject{}

func (h podEventHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.Object != nil && labelledForClusterStage(e.Object.GetLabels()) {
		enqueue.Create(ctx, e, q)
	}
}

// Update enqueues a gated pod, in particular when the local controller removed the local gate.
func (h podEventHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.ObjectNew != nil && labelledForClusterStage(e.ObjectNew.GetLabels()) {
		enqueue.Update(ctx, e, q)
	}
}

// labelledForClusterStage reports whether a pod's labels say that the cluster-wide controller may
// process it: gated by the webhook, and not (or no longer) held by a namespace's local gate. The
// webhooks set each label with its gate and every release changes it with the gate.
func labelledForClusterStage(l map[string]string) bool {
	return l[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueGated && l[v1beta1.LabelLocalSchedulingGate] != v1beta1.LabelValueGated
}

// podMetadata is the object the controller watches pods as.
func podMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return m
}

// readyForClusterStage reports whether the cluster-wide controller may process pod: it carries
// the scheduling gate and no longer the local one (the namespace's local controller goes first).
func readyForClusterStage(pod *corev1.Pod) bool {
	return v1beta1.HasSchedulingGate(&pod.Spec) && !v1beta1.HasLocalSchedulingGate(&pod.Spec)
}

func (h podEventHandler) Delete(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.Object != nil {
		h.forget(e.Object.GetUID())
	}
}

func (h podEventHandler) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue.Generic(ctx, e, q)
}

// scope is what one reconciliation of one pod knows. The phases fill it in order; commit
// writes it.
type scope struct {
	// pod is the pod as read from the cache: the base of the patch, never modified.
	pod *corev1.Pod
	// full is the pod as read from the apiserver, of which pod is the placement view: the
	// placement rules' expressions read the pod as its owner wrote it. Never modified.
	full *corev1.Pod
	// updated is the pod to write: gate removed, affinity merged, outcome recorded.
	updated *corev1.Pod
	log     logr.Logger
	// cluster is the ClusterPodPlacementConfig, nil when there is none.
	cluster *v1beta1.ClusterPodPlacementConfig
	images  []string
	keyring *credentials.Keyring
	// results holds the successful inspections, failures the failed ones (by image).
	results  []ImageResult
	failures []*inspect.Error
	// outcome is set when the pod is to be written; annotations and events go with it.
	outcome     placement.Outcome
	annotations map[string]string
	events      []podEvent
	// overlaps are the placement configurations skipped because a higher-priority one
	// matched the pod first, recorded (rate-limited) once the pod was written.
	overlaps []overlap
	// done ends the phases; without an outcome, result is returned and nothing is written.
	done   bool
	result reconcile.Result
	// deadline is when the pod must be released whatever happens (gateDeadline).
	deadline time.Time
	// fallback is the architecture the pod was placed on because its images could not be
	// inspected (ClusterPodPlacementConfig spec.fallbackArchitecture), "" when it was not.
	fallback string
}

func newScope(ctx context.Context, pod *corev1.Pod, deadline time.Time) *scope {
	return &scope{
		pod:         pod,
		updated:     pod.DeepCopy(),
		log:         logf.FromContext(ctx).WithValues("pod", klog.KObj(pod)),
		annotations: map[string]string{},
		deadline:    deadline,
	}
}

// phase is one step of a reconciliation. An error aborts it and counts against the pod's retry
// budget (phaseFailed).
type phase func(ctx context.Context, s *scope) error

// Reconcile removes the scheduling gate of one pod: fetch → scope → phases → one write.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	slot := r.tenants.acquire(req.Namespace)
	if slot {
		defer r.tenants.release(req.Namespace)
	} else if res, wait := r.overShare(ctx, req); wait {
		return res, nil
	}
	full, err := r.readPod(ctx, req.NamespacedName)
	if err != nil || full == nil {
		return reconcile.Result{}, err
	}
	pod := placementView(full)
	if pod.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if !readyForClusterStage(pod) {
		return r.releaseStrayLabel(ctx, pod)
	}
	deadline := r.gateDeadline(pod)
	if r.pastDeadline(deadline) {
		return r.releaseOverAge(ctx, newScope(ctx, pod, deadline))
	}
	if !slot { // recreated under the same name since the cache saw it: it waits for a worker
		return reconcile.Result{RequeueAfter: r.byDeadline(r.tenants.wait(), deadline)}, nil
	}
	// A pod event before the next attempt is due must not inspect early: that is not backoff.
	if wait := r.retries.Remaining(pod.UID); wait > 0 {
		return reconcile.Result{RequeueAfter: r.byDeadline(wait, deadline)}, nil
	}
	s := newScope(ctx, pod, deadline)
	s.full = full

	// Each phase a reconcile reached is observed once, with the time of its steps summed.
	spent := map[string]time.Duration{}
	defer func() {
		for name, d := range spent {
			r.metrics.phaseDuration.WithLabelValues(name).Observe(d.Seconds())
		}
	}()
	for _, p := range []struct {
		name string
		run  phase
	}{
		{phaseConfig, r.loadConfig}, {phaseConfig, r.collectImages}, {phaseCredentials, r.loadCredentials},
		{phaseInspection, r.inspectImages}, {phaseInspection, r.judgeInspection}, {phasePlacement, r.place},
	} {
		start := time.Now()
		err := p.run(ctx, s)
		spent[p.name] += time.Since(start)
		if err != nil {
			return r.phaseFailed(ctx, s, p.name, err)
		}
		if s.done {
			break
		}
	}
	if s.outcome == "" {
		return s.result, nil
	}
	start := time.Now()
	defer func() { spent[phasePatch] = time.Since(start) }()
	return r.commit(ctx, s)
}

// overShare decides for a pod whose namespace already holds its share of the workers, from
// its cached metadata rather than an apiserver read (which a namespace's many waiting pods
// would multiply): it waits (wait true, with res) a moment, at most until its gate deadline;
// past that deadline Reconcile goes on and releases it without a worker of the share.
func (r *Reconciler) overShare(ctx context.Context, req reconcile.Request) (res reconcile.Result, wait bool) {
	r.metrics.namespaceDeferrals.Inc()
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err := r.cached.Get(ctx, req.NamespacedName, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, true // released or deleted meanwhile
		}
		return reconcile.Result{RequeueAfter: r.tenants.wait()}, true
	}
	deadline := r.gateDeadline(meta)
	if r.pastDeadline(deadline) {
		return reconcile.Result{}, false
	}
	return reconcile.Result{RequeueAfter: r.byDeadline(r.tenants.wait(), deadline)}, true
}

// gateDeadline is when pod must be released whatever holds it: its creation plus MaxGateAge.
// It is zero, no limit, for a pod without a creation time (only objects that never went
// through an apiserver lack one).
func (r *Reconciler) gateDeadline(pod metav1.Object) time.Time {
	created := pod.GetCreationTimestamp()
	if created.IsZero() {
		return time.Time{}
	}
	return created.Add(r.opts.MaxGateAge)
}

// byDeadline shortens a wait so that the pod is reconciled again by its deadline, when
// releaseOverAge releases it.
func (r *Reconciler) byDeadline(wait time.Duration, deadline time.Time) time.Duration {
	if deadline.IsZero() {
		return wait
	}
	// A zero RequeueAfter would not requeue at all.
	return max(min(wait, deadline.Sub(r.opts.Clock.Now())), time.Millisecond)
}

// releaseOverAge removes the gate of a pod gated longer than MaxGateAge, whatever held it (a
// registry that never answers, an error that outlived every retry, a write refused), without
// changing its affinity unless a fallbackArchitecture is configured: no pod stays gated forever
// because of archgate.
func (r *Reconciler) releaseOverAge(ctx context.Context, s *scope) (reconcile.Result, error) {
	if err := r.loadConfig(ctx, s); err != nil {
		// Released all the same, without the fallback architecture the configuration may name.
		s.log.Info("Reading the ClusterPodPlacementConfig failed; releasing the pod without its fallbackArchitecture", "error", errString(err))
	}
	r.markOverAge(s)
	return r.commit(ctx, s)
}

// pastDeadline reports whether a pod's deadline (gateDeadline) has passed.
func (r *Reconciler) pastDeadline(deadline time.Time) bool {
	return !deadline.IsZero() && !r.opts.Clock.Now().Before(deadline)
}

// markOverAge sets the outcome, annotation and Event of a pod released for its age (placed on
// the fallback architecture when there is one).
func (r *Reconciler) markOverAge(s *scope) {
	age := r.opts.Clock.Since(s.pod.CreationTimestamp.Time).Round(time.Second)
	s.outcome = placement.OutcomeGateAgeExceeded
	s.annotations[v1beta1.AnnotationInspectionError] = fmt.Sprintf("gate held longer than maxGateAge (%s)", r.opts.MaxGateAge)
	reason, change := r.fallBack(s, reasonGateAgeExceeded)
	s.events = append(s.events, podEvent{
		eventType: corev1.EventTypeWarning,
		reason:    reason,
		note: truncate(fmt.Sprintf("Scheduling gate removed %s: the pod was gated for %s, "+
			"longer than spec.imageInspection.maxGateAge (%s) of the ClusterPodPlacementConfig", change, age, r.opts.MaxGateAge), maxNoteLen),
	})
	s.log.Info("Pod gated longer than the maximum gate age, scheduling gate removed",
		"age", age, "maxGateAge", r.opts.MaxGateAge, "fallbackArchitecture", s.fallback)
}

// fallBack places a pod that is released because its images could not be inspected on the
// ClusterPodPlacementConfig's fallbackArchitecture, unless there is none or the pod's own
// constraints decide its architecture (placement.Fallback). It returns the Event's reason
// (reason, or reasonFallbackArchitecture when the pod was placed) and what the release did to
// the node affinity, for the Event's text.
func (r *Reconciler) fallBack(s *scope, reason string) (string, string) {
	arch := ""
	if s.cluster != nil {
		arch = s.cluster.Spec.FallbackArchitecture
	}
	if arch == "" {
		return reason, "without changing the node affinity"
	}
	if _, ok := placement.Fallback(&s.updated.Spec, arch, v1beta1.ArchitectureTaintsOf(s.cluster)); !ok {
		return reason, fmt.Sprintf("without changing the node affinity (the pod's own constraints decide its architecture, so fallbackArchitecture %s does not apply)", arch)
	}
	s.fallback = arch
	if s.updated.Labels == nil {
		s.updated.Labels = map[string]string{}
	}
	s.updated.Labels[v1beta1.LabelFallbackArchitecture] = arch
	return reasonFallbackArchitecture, fmt.Sprintf("with the node affinity set to the fallback architecture %s (spec.fallbackArchitecture of the ClusterPodPlacementConfig)", arch)
}

// phaseFailed handles a phase's error, which is not a registry's (an imagePullSecret the
// apiserver refuses to read, a failed cache read): it counts against the pod's retry budget as a
// failed inspection does, so that no error, however persistent, holds a pod past its budget.
func (r *Reconciler) phaseFailed(ctx context.Context, s *scope, phase string, err error) (reconcile.Result, error) {
	if ctx.Err() != nil {
		// The manager is stopping: nobody's fault, nothing to record.
		return reconcile.Result{}, err
	}
	delay, retry := r.afterFailure(s, true)
	switch {
	case retry:
		s.log.Info("Reconcile failed, retrying later", "phase", phase, "retry", r.retries.Retries(s.pod.UID), "retryIn", delay, "error", errString(err))
		return reconcile.Result{RequeueAfter: delay}, nil
	case s.outcome == "":
		attempts := r.markInspectionFailed(s, phase+": "+errString(err), fmt.Sprintf("the %s phase failed: %s", phase, errString(err)))
		s.log.Info("Reconcile failed for good, scheduling gate removed",
			"phase", phase, "attempts", attempts, "error", errString(err), "fallbackArchitecture", s.fallback)
	}
	return r.commit(ctx, s)
}

// readPod reads the pod to reconcile, nil when it is gone from the cache of gated pods or from
// the apiserver. The cache holds the gated pods' metadata only: at 10,000 gated pods, ~2 KB
// each even as placement views, a cache of pods was the controller's memory
// (docs/performance.md). So the pod is read once per reconcile, at the resourceVersion the
// cache has seen or newer: the apiserver serves that from its watch cache, without a read from
// etcd (13 ms on average per gated pod on a loaded 2-core machine when it did).
func (r *Reconciler) readPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	m := podMetadata()
	if err := r.client.Get(ctx, key, m); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	pod := &corev1.Pod{}
	if err := r.pods.Get(ctx, key, pod, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: m.ResourceVersion}}); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return pod, nil
}

// releaseStrayLabel sets the gated label of a pod whose gate someone else removed (by hand, or
// another tool) to removed, so that the pod leaves the cache and the gated-pods gauges, which
// count labels, stay true. A pod still held by its local gate is left alone.
func (r *Reconciler) releaseStrayLabel(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	if v1beta1.HasSchedulingGate(&pod.Spec) || !labelledForClusterStage(pod.Labels) {
		return reconcile.Result{}, nil
	}
	// The gated label makes ReleasePatch's ok true: it removes no gate, only releases the label.
	patch, _ := ReleasePatch(pod)
	// A failed "test" (the pod changed meanwhile) is an error too: the retry reads the pod again.
	if err := r.client.Patch(ctx, pod, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	logf.FromContext(ctx).Info("Pod carried the gated label without the scheduling gate; label set to removed", "pod", klog.KObj(pod))
	return reconcile.Result{}, nil
}

// The phases of a reconcile, the label of archgate_placement_reconcile_phase_duration_seconds.
const (
	phaseConfig      = "config"
	phaseCredentials = "credentials"
	phaseInspection  = "inspection"
	phasePlacement   = "placement"
	phasePatch       = "patch"
)

// loadConfig reads the ClusterPodPlacementConfig from the cache.
func (r *Reconciler) loadConfig(ctx context.Context, s *scope) (err error) {
	s.cluster, err = placementconfig.Cluster(ctx, r.client)
	return err
}

// collectImages lists the pod's distinct images. A pod naming more than MaxImagesPerPod is
// released at once, none inspected: each image costs registry requests and a share of the
// workers that one pod must not take from the others, and no retry would change the count.
func (r *Reconciler) collectImages(_ context.Context, s *scope) error {
	s.images = placement.PodImages(&s.pod.Spec)
	if n := len(s.images); n > r.opts.MaxImagesPerPod {
		s.done = true
		why := fmt.Sprintf("the pod names %d images, more than maxImagesPerPod (%d); none was inspected", n, r.opts.MaxImagesPerPod)
		r.markInspectionFailed(s, why, why)
		s.log.Info("Too many images to inspect, scheduling gate removed", "images", n, "maxImagesPerPod", r.opts.MaxImagesPerPod,
			"fallbackArchitecture", s.fallback)
	}
	return nil
}

// loadCredentials builds the keyring of the pod: its imagePullSecrets, then the global pull secret.
func (r *Reconciler) loadCredentials(ctx context.Context, s *scope) error {
	keyring, err := loadKeyring(ctx, r.global, r.secrets, s.pod, s.log)
	s.keyring = keyring
	return err
}

// inspectImages inspects the pod's images concurrently (bounded) within one deadline.
func (r *Reconciler) inspectImages(ctx context.Context, s *scope) error {
	start := time.Now()
	rounds := (len(s.images) + r.opts.InspectWorkers - 1) / r.opts.InspectWorkers
	// A registry that never answers holds the pod until its deadline at most. The namespace is
	// the tenant whose share of each registry's inspections is bounded.
	ictx, cancel := context.WithTimeout(inspect.WithTenant(ctx, s.pod.Namespace), r.byDeadline(time.Duration(max(rounds, 1))*r.opts.InspectTimeout, s.deadline))
	defer cancel()

	results := make([]inspect.Result, len(s.images))
	errs := make([]error, len(s.images))
	var g errgroup.Group
	g.SetLimit(r.opts.InspectWorkers)
	for i, img := range s.images {
		g.Go(func() error {
			results[i], errs[i] = r.inspectImage(ictx, s.keyring, img)
			return nil
		})
	}
	_ = g.Wait() // the goroutines report through errs

	if ctx.Err() != nil {
		// The manager is stopping: nobody's fault, nothing to record.
		s.done = true
		return nil
	}
	for i, img := range s.images {
		if errs[i] == nil {
			s.results = append(s.results, ImageResult{Image: img, Result: results[i]})
			continue
		}
		var ie *inspect.Error
		if !errors.As(errs[i], &ie) {
			ie = &inspect.Error{Image: img, Reason: inspect.ReasonOf(errs[i]), Err: errs[i]}
		}
		s.failures = append(s.failures, ie)
		r.metrics.inspectionErrors.WithLabelValues(string(ie.Reason)).Inc()
	}
	result := resultSuccess
	if len(s.failures) > 0 {
		result = resultError
	}
	r.metrics.inspectionDuration.WithLabelValues(result).Observe(time.Since(start).Seconds())
	return nil
}

// inspectImage inspects one image as the container runtime would pull it: a short name is
// tried in every reference Options.ShortNames gives, in order, until one can be read, as CRI-O
// tries its pull candidates; each with the credentials that match that reference's registry.
// When none can be read, the error is the first candidate's reason with every candidate's error.
func (r *Reconciler) inspectImage(ctx context.Context, keyring *credentials.Keyring, img string) (inspect.Result, error) {
	if r.opts.ShortNames == nil {
		return r.inspectReference(ctx, keyring, img)
	}
	candidates, err := r.opts.ShortNames(img)
	if err != nil {
		return inspect.Result{}, &inspect.Error{Image: img, Reason: inspect.ReasonInvalidReference, Err: err}
	}
	if canonical, _, err := inspect.CanonicalReference(img); err == nil && slices.Equal(candidates, []string{canonical}) {
		return r.inspectReference(ctx, keyring, img) // not resolved differently: as named
	}
	var errs []error
	reason := inspect.Reason("")
	for _, c := range candidates {
		res, err := r.inspectReference(ctx, keyring, c)
		if err == nil {
			return res, nil
		}
		if reason == "" {
			reason = inspect.ReasonOf(err)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return inspect.Result{}, &inspect.Error{Image: img, Reason: reason, Err: fmt.Errorf(
		"short name resolved with registries.conf to %s: %w", strings.Join(candidates, ", "), errors.Join(errs...))}
}

// inspectReference inspects one image with the pod's candidate credentials: its keyring, then
// what the credential provider plugins give the image. A plugin that failed is left out, as
// the kubelet does; if the inspection then fails, its error says why the plugin gave nothing.
func (r *Reconciler) inspectReference(ctx context.Context, keyring *credentials.Keyring, img string) (inspect.Result, error) {
	var pluginErr error
	if r.opts.NodeCredentials != nil {
		var cfgs []credentials.Config
		cfgs, pluginErr = r.opts.NodeCredentials.Configs(ctx, img)
		keyring = keyring.WithNode(cfgs...)
	}
	creds, err := keyring.Lookup(img)
	if err != nil {
		return inspect.Result{}, &inspect.Error{Image: img, Reason: inspect.ReasonInvalidReference, Err: err}
	}
	res, err := r.opts.Inspector.Architectures(ctx, img, creds)
	if err == nil || pluginErr == nil {
		return res, err
	}
	// A new error: the inspector may share err with other callers (its failure cache).
	reason, cause := inspect.ReasonOf(err), err
	var ie *inspect.Error
	if errors.As(err, &ie) {
		cause = ie.Err
	}
	return inspect.Result{}, &inspect.Error{Image: img, Reason: reason, Err: errors.Join(cause, pluginErr)}
}

// terminal reports whether retrying the inspection cannot help: the reference cannot be parsed,
// so no registry will ever answer for it (the kubelet cannot pull it either), or registries.conf
// blocks its registry (the pod is released at once, with the reason in its annotation and an
// Event; a changed registries.conf rolls the controller). Not-found is
// retried: registries answer 404 to hide private repositories from clients without
// credentials, and the pull secret may be created after the pod; images may also be pushed
// after the pod that uses them. The budget bounds the cost.
func terminal(reason inspect.Reason) bool {
	return reason == inspect.ReasonInvalidReference || reason == inspect.ReasonBlocked
}

// busyWait is the first wait of a pod whose registries were all busy, with up to as much
// jitter: short, since a healthy registry's slots free within milliseconds, and every busy
// round in a row doubles it up to maxBusyWait.
const busyWait = 50 * time.Millisecond

// maxBusyWait bounds the wait of a pod whose registries stay busy: a registry's slots are held
// up to the inspection timeout by hanging inspections, so its pods would otherwise come back
// many times a second, each time with a read of the pod from the apiserver.
const maxBusyWait = 8 * time.Second

// forget drops the backoff state of a pod that was released or deleted.
func (r *Reconciler) forget(uid types.UID) {
	r.retries.Forget(uid)
	r.busy.Forget(uid)
}

// judgeInspection intersects the results, or handles the failures: a retry with backoff while
// the budget lasts, otherwise the gate is removed without touching the affinity.
func (r *Reconciler) judgeInspection(_ context.Context, s *scope) error {
	if len(s.failures) == 0 {
		return nil
	}
	s.done = true
	if !slices.ContainsFunc(s.failures, func(e *inspect.Error) bool { return e.Reason != inspect.ReasonRegistryBusy }) {
		// Only busy registries: nothing failed, the pod waits its turn, at no cost to its retry
		// budget but longer each busy round in a row (each round reads the pod again).
		wait := r.busy.When(s.pod.UID)
		s.log.V(1).Info("Registries busy, inspecting again shortly", "retryIn", wait, "failures", failureSummary(s.failures))
		s.result = reconcile.Result{RequeueAfter: r.byDeadline(wait+rand.N(busyWait), s.deadline)}
		return nil
	}
	retryable := !slices.ContainsFunc(s.failures, func(e *inspect.Error) bool { return terminal(e.Reason) })
	delay, retry := r.afterFailure(s, retryable)
	switch {
	case retry:
		s.log.V(1).Info("Image inspection failed, retrying later",
			"retry", r.retries.Retries(s.pod.UID), "retryIn", delay, "failures", failureSummary(s.failures))
		s.result = reconcile.Result{RequeueAfter: delay}
	case s.outcome == "":
		attempts := r.markInspectionFailed(s, shortFailure(s.failures),
			failureReasons(s.failures)+" (the pod placement controller's log has each registry's answer)")
		s.log.Info("Image inspection failed for good, scheduling gate removed",
			"attempts", attempts, "failures", failureDetails(s.failures), "fallbackArchitecture", s.fallback)
	}
	return nil
}

// afterFailure decides what a failed attempt leads to: a retry after delay, or (retry false) a
// release now. A pod past its deadline is marked over age here, and released at once: a
// requeue would wait behind every other gated pod, each of which may hold a worker as long.
// Otherwise a retryable failure is retried while the budget lasts; the caller marks a pod that
// is not retried (its outcome is still empty).
func (r *Reconciler) afterFailure(s *scope, retryable bool) (delay time.Duration, retry bool) {
	// A retry must see rotated or newly created imagePullSecrets.
	r.secrets.Forget(s.pod)
	if r.pastDeadline(s.deadline) {
		r.markOverAge(s)
		return 0, false
	}
	if !retryable {
		return 0, false
	}
	// The budget comes from the controller's settings only (the operator resolves
	// spec.imageInspection once and renders it into the arguments), so that what the
	// Deployment says is what the controller does.
	delay, exhausted := r.retries.Failed(s.pod.UID, r.opts.MaxRetries)
	if exhausted {
		return 0, false
	}
	r.metrics.retries.Inc()
	return r.byDeadline(delay, s.deadline), true
}

// markInspectionFailed sets the outcome, annotation and Warning Event of a pod released after
// its attempts failed (unplaced, or on the fallback architecture when there is one), and
// returns how many attempts were made.
func (r *Reconciler) markInspectionFailed(s *scope, annotation, why string) int {
	attempts := r.retries.Retries(s.pod.UID) + 1
	s.outcome = placement.OutcomeInspectionFailed
	s.annotations[v1beta1.AnnotationInspectionError] = truncate(annotation, maxAnnotationReasonLen)
	reason, change := r.fallBack(s, reasonInspectionFailed)
	s.events = append(s.events, podEvent{
		eventType: corev1.EventTypeWarning,
		reason:    reason,
		note:      truncate(fmt.Sprintf("Scheduling gate removed %s after %d attempt(s): %s", change, attempts, why), maxNoteLen),
	})
	return attempts
}

// place merges the images' architectures, narrowed by the placement rules that match the pod,
// into the required node affinity (or makes it unsatisfiable when none is left), then the
// preferred weights of the first applicable source: the pod's preferred-architecture label, its
// PodPlacementConfigs by descending priority, the first matching placement rule with
// preferences, then the ClusterPodPlacementConfig (placement.Decide, which the webhook applies
// at admission too).
func (r *Reconciler) place(ctx context.Context, s *scope) error {
	configs, err := placementconfig.Namespace(ctx, r.client, s.pod.Namespace)
	if err != nil {
		return err
	}
	evals := r.opts.Rules.Evaluate(ctx, v1beta1.PlacementRulesOf(s.cluster), s.full)
	if err := ctx.Err(); err != nil {
		return err // the manager is stopping: the evaluations say nothing about the rules
	}
	r.reportRules(s, evals)
	// With local placement, the PodPlacementConfigs may already have been applied by the
	// namespace's local controller (placement.ClusterStage).
	ppcs, cluster, _ := placement.ClusterStage(s.pod, configs, s.cluster)
	d := placement.Decide(s.updated, architectures(s.results), ppcs, cluster, placement.ConstraintsOf(s.cluster, evals.Matched()))
	s.outcome = d.Outcome
	maps.Copy(s.annotations, d.Annotations())
	if d.NoCommonArchitecture {
		why := fmt.Sprintf("The images share no architecture (%s)", describeArchitectures(s.results))
		if len(d.RequiredBy) > 0 {
			why = fmt.Sprintf("The placement rules %s allow none of the architectures the images run on (%s)",
				strings.Join(d.RequiredBy, ", "), describeAnnotation(d.Architectures))
		}
		s.events = append(s.events, podEvent{
			eventType: corev1.EventTypeWarning,
			reason:    reasonNoCommonArchitecture,
			note: truncate(fmt.Sprintf("%s; the pod stays Pending: its required node affinity needs %s, which no node has",
				why, placement.NoSupportedArchitectureKey), maxNoteLen),
		})
		return nil
	}
	if d.SelectorErr != nil {
		s.log.Info("Ignoring PodPlacementConfigs with an invalid label selector", "reason", d.SelectorErr.Error())
	}
	for _, c := range d.Preferred.SkippedSources {
		r.metrics.sourcesSkipped.WithLabelValues(string(c.Reason)).Inc()
		if obj := overlapObject(c, configs, s.cluster); obj != nil {
			s.overlaps = append(s.overlaps, overlap{config: obj, skipped: c})
		}
	}
	if conflicts := d.Preferred.Conflicts(); len(conflicts) > 0 {
		s.events = append(s.events, podEvent{
			eventType: corev1.EventTypeNormal,
			reason:    reasonPreferenceSkipped,
			note:      truncate(skippedSourcesNote(conflicts), maxNoteLen),
		})
	}
	return nil
}

// reportRules counts each rule's evaluation and turns the failed ones into one Warning Event
// (one write however many failed): a rule that could not be evaluated did not apply to the pod,
// and the pod's owner and the cluster's administrator must be able to see which and why.
func (r *Reconciler) reportRules(s *scope, evals placementrules.Evaluations) {
	var failed []string
	for _, e := range evals {
		r.metrics.ruleEvaluations.WithLabelValues(e.Rule.Name, string(e.Result)).Inc()
		if e.Result == placementrules.Failed {
			failed = append(failed, e.Rule.Name+": "+truncate(errString(e.Err), maxRuleErrorLen))
		}
	}
	if len(failed) == 0 {
		return
	}
	s.log.Info("Placement rules could not be evaluated for the pod and did not apply", "rules", strings.Join(failed, "; "))
	s.events = append(s.events, podEvent{
		eventType: corev1.EventTypeWarning,
		reason:    reasonPlacementRuleFailed,
		note: truncate("Placement rules not applied, their evaluation failed (spec.placementRules of the ClusterPodPlacementConfig): "+
			strings.Join(failed, "; "), maxNoteLen),
	})
}

// commit writes the pod once: gate removed (other gates stay), affinity merged, outcome in the
// labels and annotations. The patch carries the resourceVersion read, so a concurrent change
// makes it fail with a conflict instead of being overwritten.
func (r *Reconciler) commit(ctx context.Context, s *scope) (reconcile.Result, error) {
	ungate(s.updated, s.outcome, s.annotations)
	err := r.client.Patch(ctx, s.updated, client.MergeFromWithOptions(s.pod, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		r.metrics.patches.WithLabelValues(resultSuccess).Inc()
	case apierrors.IsNotFound(err):
		r.forget(s.pod.UID)
		return reconcile.Result{}, nil
	case apierrors.IsConflict(err):
		r.metrics.patches.WithLabelValues(resultConflict).Inc()
		s.log.V(1).Info("Pod changed while it was processed, retrying")
		return reconcile.Result{RequeueAfter: conflictRequeueDelay}, nil
	default:
		r.metrics.patches.WithLabelValues(resultError).Inc()
		return reconcile.Result{}, fmt.Errorf("removing the scheduling gate: %w", err)
	}
	r.forget(s.pod.UID)
	r.released()
	r.metrics.podsProcessed.WithLabelValues(s.outcome.LabelValue()).Inc()
	if s.fallback != "" {
		r.metrics.fallbacks.WithLabelValues(s.fallback).Inc()
	}
	for _, e := range s.events {
		r.metrics.events.WithLabelValues(e.reason).Inc()
		r.recorder.Eventf(s.updated, nil, e.eventType, e.reason, eventAction, "%s", e.note)
	}
	if r.overlaps != nil {
		for _, o := range s.overlaps {
			r.overlaps.Record(o.config, o.skipped, s.updated)
		}
	}
	s.log.V(1).Info("Scheduling gate removed", "outcome", s.outcome,
		"architectures", s.annotations[v1beta1.AnnotationArchitectures], "images", len(s.images))
	return reconcile.Result{}, nil
}

// failureSummary lists "reason image" per failure, for logs.
func failureSummary(failures []*inspect.Error) string {
	parts := make([]string, 0, len(failures))
	for _, f := range failures {
		parts = append(parts, string(f.Reason)+" "+f.Image)
	}
	return strings.Join(parts, ", ")
}

// shortFailure is the inspection-error annotation: the first failure's reason and image, and how
// many more there are.
func shortFailure(failures []*inspect.Error) string {
	if len(failures) == 0 {
		return ""
	}
	s := string(failures[0].Reason) + ": " + failures[0].Image
	if n := len(failures) - 1; n > 0 {
		s += fmt.Sprintf(" (+%d more)", n)
	}
	return s
}

// failureReasons is the Event text: each failure's image and reason. The registry's own answer
// stays out of Events, which the pod's namespace can read: any image reference makes the
// controller call the host it names, and the raw error would tell a tenant what archgate's
// network position sees there (open ports, paths, internal names). The errors archgate decides
// without asking any registry (a blocked registry, an unparsable reference) are kept: they say
// what to fix.
func failureReasons(failures []*inspect.Error) string {
	parts := make([]string, 0, len(failures))
	for _, f := range failures {
		part := fmt.Sprintf("%s (%s)", f.Image, f.Reason)
		if terminal(f.Reason) {
			part += ": " + truncate(errString(f.Err), 300)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// failureDetails is the log text: each failure's reason, image and error. Inspection errors
// name where a credential came from, never its content.
func failureDetails(failures []*inspect.Error) string {
	parts := make([]string, 0, len(failures))
	for _, f := range failures {
		parts = append(parts, fmt.Sprintf("%s (%s): %s", f.Image, f.Reason, truncate(errString(f.Err), 300)))
	}
	return strings.Join(parts, "; ")
}

func errString(err error) string {
	if err == nil {
		return "unknown error"
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
