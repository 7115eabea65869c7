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
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/version"
)

// The operator's permissions. The ClusterRole must hold everything it grants to the pod
// placement controller (RBAC escalation check), which is why pods, secrets, configmaps and
// events appear here although the operator itself only releases pods. Cluster-scoped objects
// (and the pull-secret Role, which lives in the secret's namespace) are written by
// server-side apply, which the apiserver authorizes with the object's name, also when the
// apply creates it: the write verbs, create included, name the objects the operator owns, so
// it can change nothing else of the cluster, and a plain POST (no name) is refused. It reads
// nodes only so that it may grant the controller that read for the exec-format-error monitor
// (RBAC refuses to grant what the granter lacks).
//
// +kubebuilder:rbac:groups=multiarch.openshift.io,resources=clusterpodplacementconfigs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=multiarch.openshift.io,resources=clusterpodplacementconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=multiarch.openshift.io,resources=clusterpodplacementconfigs/finalizers,verbs=update
// +kubebuilder:rbac:groups=multiarch.openshift.io,resources=podplacementconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=multiarch.openshift.io,resources=podplacementconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",namespace=archgate-system,resources=secrets,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles;clusterrolebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles;clusterrolebindings,resourceNames=archgate-controller;archgate-webhook,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,resourceNames=archgate-controller-pod-deleter,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,resourceNames=archgate-controller-pod-deleter,verbs=bind
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,resourceNames=archgate-controller-pull-secret,verbs=delete
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=archgate-scheduling-gate,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;mutatingadmissionpolicybindings,resourceNames=archgate-placement;archgate-placement-probe,verbs=update;patch;delete
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=archgate-operator-validation,verbs=update;patch
// +kubebuilder:rbac:groups=apps,namespace=archgate-system,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,namespace=archgate-system,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=archgate-system,resources=services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=archgate-system,resources=secrets;configmaps,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,namespace=archgate-system,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=archgate-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,namespace=archgate-system,resources=issuers;certificates,verbs=get;list;watch;create;update;patch;delete
// OpenShift's mirror sets, read (where served) to render the controller's registries.conf drop-in:
// +kubebuilder:rbac:groups=config.openshift.io,resources=imagedigestmirrorsets;imagetagmirrorsets,verbs=get;list;watch
// The metrics endpoints' authentication and authorization (and granting the same to the
// components' ClusterRoles, which RBAC allows only to a holder):
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
//
// A namespace's local components (spec.localPlacement), in any namespace with a
// PodPlacementConfig: written by server-side apply and deleted by name, so the write verbs name
// them; reading Deployments cluster-wide is what watching their rollout costs. The local
// webhooks' entries live in one MutatingWebhookConfiguration.
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,resourceNames=archgate-local-controller;archgate-local-webhook,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts,resourceNames=archgate-local-controller;archgate-local-webhook,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,resourceNames=archgate-local-controller;archgate-local-webhook,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,resourceNames=archgate-local-webhook-serving-cert,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=archgate-local-scheduling-gate,verbs=create;update;patch;delete

// Defaults of Options.
const (
	// DefaultReleaseWorkers is the number of pods released concurrently during a deletion.
	DefaultReleaseWorkers = 16
	// DefaultReleasePassTimeout bounds one pass of releasing gated pods; the next pass follows
	// right after, with the status updated in between.
	DefaultReleasePassTimeout = time.Minute
	// DefaultResyncPeriod re-runs the reconcile when nothing happened, to repair drift and
	// renew certificates.
	DefaultResyncPeriod = 10 * time.Minute
	// waitRequeue re-checks a blocked step that no watch covers.
	waitRequeue = 15 * time.Second
)

// Options configures the Reconciler.
type Options struct {
	// Namespace is where the operator and its components run. Required.
	Namespace string
	// Platform decides the default global pull secret (seed 004); PlatformKubernetes when empty.
	Platform v1beta1.Platform
	// Image is the archgate image the components run. Required.
	Image string
	// CertProvider issues the webhook's serving certificate; ProviderSelfSigned when empty.
	CertProvider certs.Provider
	// Certs keeps the operator's CA and the serving certificates it issues. Required unless
	// CertProvider is ProviderServiceCA: the metrics certificates come from the operator's CA
	// with cert-manager too (certs.Provider.MetricsProvider).
	Certs *certs.Manager
	// MutatingWebhookConfigurationName names the MutatingWebhookConfiguration;
	// DefaultMutatingWebhookConfigurationName when empty.
	MutatingWebhookConfigurationName string
	// Args builds the components' command lines; DefaultArgs when nil.
	Args ArgsFunc
	// ReleaseWorkers and ReleasePassTimeout tune the release of gated pods on deletion.
	ReleaseWorkers     int
	ReleasePassTimeout time.Duration
	// ResyncPeriod re-runs the reconcile periodically; DefaultResyncPeriod when zero.
	ResyncPeriod time.Duration
	// Recorder emits Events for anomalies (fail-open unregistration, release failures); none when nil.
	Recorder events.EventRecorder
	// FailOpenGracePeriod is how long a component may stay unavailable before the operator
	// removes the MutatingWebhookConfiguration (fail open); zero removes it at once. Meanwhile
	// new pods are still gated (or placed at admission) and wait for the controller, which is
	// what a rolling restart or a short node failure should cost; past it, pods are admitted
	// ungated rather than held.
	FailOpenGracePeriod time.Duration
	// ProxyEnv is set on the components' containers: the operator's own HTTP_PROXY,
	// HTTPS_PROXY and NO_PROXY (see ProxyEnv), so that the controller reaches registries the
	// way the operator was told to reach the network.
	ProxyEnv []corev1.EnvVar
}

// ProxyEnv returns the proxy variables that lookup (os.LookupEnv in the operator) defines, in
// both spellings Go's net/http (golang.org/x/net/http/httpproxy) reads and in a fixed order, so
// that the rendered Deployments do not change from one start to the next.
func ProxyEnv(lookup func(string) (string, bool)) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"} {
		if v, ok := lookup(name); ok {
			env = append(env, corev1.EnvVar{Name: name, Value: v})
		}
	}
	return env
}

func (o Options) withDefaults() (Options, error) {
	if o.Namespace == "" || o.Image == "" {
		return o, errors.New("operator reconciler: Namespace and Image are required")
	}
	if o.CertProvider == "" {
		o.CertProvider = certs.ProviderSelfSigned
	}
	if o.CertProvider.MetricsProvider() == certs.ProviderSelfSigned && o.Certs == nil {
		return o, fmt.Errorf("operator reconciler: the %s certificate provider needs a certs.Manager (the metrics certificates come from the operator's CA)", o.CertProvider)
	}
	if o.MutatingWebhookConfigurationName == "" {
		o.MutatingWebhookConfigurationName = DefaultMutatingWebhookConfigurationName
	}
	if o.Args == nil {
		o.Args = DefaultArgs
	}
	if o.ReleaseWorkers <= 0 {
		o.ReleaseWorkers = DefaultReleaseWorkers
	}
	if o.ReleasePassTimeout <= 0 {
		o.ReleasePassTimeout = DefaultReleasePassTimeout
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = DefaultResyncPeriod
	}
	return o, nil
}

// Reconciler reconciles the ClusterPodPlacementConfig singleton.
type Reconciler struct {
	// client reads the cache (the ClusterPodPlacementConfig and the components) and writes.
	client client.Client
	// uncached reads and writes objects the operator does not cache: Secrets, ConfigMaps, pods.
	uncached client.Client
	scheme   *runtime.Scheme
	opts     Options

	mu sync.Mutex
	// deletionSeen records, per ClusterPodPlacementConfig UID, when this process started
	// removing it (see unregisteredAt).
	deletionSeen map[types.UID]time.Time
	// unavailableSince records, per component Deployment, when this process first saw it
	// unavailable (the fail-open grace period runs from there; a restarted operator starts it
	// again, which only delays failing open).
	unavailableSince map[string]time.Time
	// probe is the last answer of the admission policy probe.
	probe policyProbe
	// watchMirrorSet starts a mirror set kind's watch (set by SetupWithManager, nil without a
	// manager); mirrorSetWatches records the kinds watched, by kind.
	watchMirrorSet   mirrorSetWatcher
	mirrorSetWatches map[string]bool
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. c should read from a cache configured with CacheOptions; uncached
// must not be backed by a cache (pods, Secrets and ConfigMaps are read through it).
func New(c, uncached client.Client, scheme *runtime.Scheme, opts Options) (*Reconciler, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Reconciler{client: c, uncached: uncached, scheme: scheme, opts: opts}, nil
}

// CacheOptions returns the cache settings the operator's manager needs: the components are
// cached only in namespace (namespaced ones) or by the managed-by label (cluster-scoped ones),
// ConfigMaps are watched cluster-wide as metadata only, to notice changes to the linked
// objects, Secrets as metadata only in namespace (a global pull secret elsewhere is polled by
// name, see pullSecretPoller): the operator may not list or watch anyone else's Secrets.
func CacheOptions(namespace string) cache.Options {
	managed := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})
	inNamespace := map[string]cache.Config{namespace: {}}
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			// Every namespace: a namespace's local components (spec.localPlacement) are managed too.
			&appsv1.Deployment{}:            {Label: managed},
			&corev1.Service{}:               {Namespaces: inNamespace, Label: managed},
			&corev1.ServiceAccount{}:        {Namespaces: inNamespace, Label: managed},
			&policyv1.PodDisruptionBudget{}: {Namespaces: inNamespace, Label: managed},
			&rbacv1.Role{}:                  {Namespaces: inNamespace, Label: managed},
			&rbacv1.RoleBinding{}:           {Namespaces: inNamespace, Label: managed},
			&rbacv1.ClusterRole{}:           {Label: managed},
			&rbacv1.ClusterRoleBinding{}:    {Label: managed},
			&admissionregistrationv1.MutatingWebhookConfiguration{}: {Label: managed},
			&corev1.Secret{}:    {Namespaces: inNamespace},
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{}},
		},
	}
}

// SetupWithManager registers the reconciler. The manager's cache must use CacheOptions.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	poller := newPullSecretPoller(r.client, r.uncached, r.opts.Namespace, r.opts.Platform)
	if err := mgr.Add(poller); err != nil {
		return err
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("clusterpodplacementconfig").
		For(&v1beta1.ClusterPodPlacementConfig{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == v1beta1.SingletonName
		}))).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&rbacv1.ClusterRole{}).
		Owns(&rbacv1.ClusterRoleBinding{}).
		Owns(&admissionregistrationv1.MutatingWebhookConfiguration{}).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.mapLinked("Secret",
			WebhookServingSecretName, WebhookMetricsSecretName, ControllerMetricsSecretName))).
		WatchesRawSource(source.Channel(poller.events, &handler.EnqueueRequestForObject{})).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.mapLinked("ConfigMap", RegistryCABundleName, RegistriesConfName, RegistryCertsName, CredentialProvidersName))).
		Build(r)
	if err != nil {
		return err
	}
	// The mirror sets' watches start from the reconcile, where their API is served (see
	// readMirrorSets).
	r.watchMirrorSet = newMirrorSetWatcher(c, mgr.GetCache())
	return nil
}

// mapLinked enqueues the singleton when obj is one of the linked objects the spec references,
// or one of the operator's own objects of that kind named own.
func (r *Reconciler) mapLinked(kind string, own ...string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if key.Namespace == r.opts.Namespace && slices.Contains(own, key.Name) {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: v1beta1.SingletonName}}}
		}
		cppc := &v1beta1.ClusterPodPlacementConfig{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: v1beta1.SingletonName}, cppc); err != nil {
			return nil
		}
		if refersTo(&cppc.Spec, r.opts.Namespace, r.opts.Platform, kind, key) {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: v1beta1.SingletonName}}}
		}
		return nil
	}
}

// scope is the state of one reconcile: what was read, what the steps found, and what the
// status will say. Steps fill it in; the conditions are computed from it at the end.
type scope struct {
	cppc *v1beta1.ClusterPodPlacementConfig
	// params are the builders' inputs.
	params operandParams
	// obs is what the conditions are computed from.
	obs observation
	// linked is what the linked-objects step found.
	linked linkedState
	// caBundle is the self-signed CA bundle for the webhook configuration (nil otherwise).
	caBundle []byte
	// requeueAfter is the soonest time something must be re-checked (certificate renewal, a
	// blocked step); zero means the resync period.
	requeueAfter time.Duration
}

// requeueIn keeps the soonest requeue.
func (s *scope) requeueIn(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if s.requeueAfter == 0 || d < s.requeueAfter {
		s.requeueAfter = d
	}
}

// step is one node of the rollout graph. run applies the step's objects and reports what it
// waits for ("" when ready); a step that waits or fails blocks every step after it.
type step struct {
	name string
	run  func(ctx context.Context, s *scope) (waiting string, err error)
}

func (r *Reconciler) steps() []step {
	return []step{
		{"linked objects", r.checkLinkedObjects},
		{"service accounts and RBAC", r.applyIdentity},
		{"webhook service and certificates", r.applyServing},
		{"deployments", r.applyDeployments},
		{"webhook registration", r.registerWebhook},
		{"admission policy", r.applyAdmissionPolicy},
	}
}

// Reconcile rolls the components out, or removes them when the ClusterPodPlacementConfig is
// being deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	cppc := &v1beta1.ClusterPodPlacementConfig{}
	if err := r.client.Get(ctx, req.NamespacedName, cppc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{cppc: cppc}
	s.obs.webhookConfigurationName = r.opts.MutatingWebhookConfigurationName
	if err := r.observe(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if !cppc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if !controllerutil.ContainsFinalizer(cppc, Finalizer) {
		before := cppc.DeepCopy()
		controllerutil.AddFinalizer(cppc, Finalizer)
		if err := r.client.Patch(ctx, cppc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}

	owner, err := ownerApplyConfiguration(cppc, r.scheme)
	if err != nil {
		return reconcile.Result{}, err
	}
	s.params = operandParams{
		owner:     owner,
		namespace: r.opts.Namespace,
		image:     r.opts.Image,
		verbosity: cppc.Spec.LogVerbosity,
		// Resolved once, here; the API server has checked the bounds (CRD markers), and the
		// controller checks them again rather than re-defaulting.
		inspection:                    ptr.To(cppc.Spec.ImageInspection.Settings()),
		admissionPlacement:            cppc.Spec.AdmissionPlacementEnabled(),
		execFormatErrorMonitor:        cppc.Spec.Plugins.ExecFormatErrorMonitorEnabled(),
		execFormatErrorDeleteInterval: cppc.Spec.Plugins.ExecFormatErrorDeleteInterval(),
		proxyEnv:                      r.opts.ProxyEnv,
		provider:                      r.opts.CertProvider,
		args:                          r.opts.Args,
		components:                    cppc.Spec.Components,
	}
	if err := r.decideAdmissionPolicy(s); err != nil {
		return reconcile.Result{}, err
	}
	for _, st := range r.steps() {
		waiting, err := st.run(ctx, s)
		if err != nil {
			s.obs.applyErr = fmt.Errorf("%s: %w", st.name, err)
			break
		}
		if waiting != "" {
			s.obs.waiting = st.name + ": " + waiting
			s.requeueIn(waitRequeue)
			log.V(1).Info("Rollout waiting", "step", st.name, "for", waiting)
			break
		}
	}
	failOpenErr := r.failOpen(ctx, s)
	statusErr := r.updateStatus(ctx, s)
	if err := errors.Join(s.obs.applyErr, failOpenErr, statusErr); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: s.nextRequeue(r.opts.ResyncPeriod)}, nil
}

func (s *scope) nextRequeue(resync time.Duration) time.Duration {
	if s.requeueAfter > 0 && s.requeueAfter < resync {
		return s.requeueAfter
	}
	return resync
}

// observe reads the components' Deployments and the webhook registration from the cache.
func (r *Reconciler) observe(ctx context.Context, s *scope) error {
	for _, d := range []struct {
		name string
		into *deploymentState
	}{{WebhookComponentName, &s.obs.webhook}, {ControllerComponentName, &s.obs.controller}} {
		key := types.NamespacedName{Namespace: r.opts.Namespace, Name: d.name}
		dep := &appsv1.Deployment{}
		switch err := r.client.Get(ctx, key, dep); {
		case apierrors.IsNotFound(err):
			*d.into = observeDeployment(key.String(), nil)
		case err != nil:
			return err
		default:
			*d.into = observeDeployment(key.String(), dep)
		}
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	switch err := r.client.Get(ctx, types.NamespacedName{Name: r.opts.MutatingWebhookConfigurationName}, mwc); {
	case apierrors.IsNotFound(err):
		s.obs.registered = false
	case err != nil:
		return err
	default:
		s.obs.registered = mwc.DeletionTimestamp.IsZero()
	}
	return nil
}

// failOpen removes the MutatingWebhookConfiguration when a component has no available replica:
// with no webhook behind it every pod creation would wait for the timeout, and with no controller
// every gated pod would stay Pending. A component short of some replicas still serves.
func (r *Reconciler) failOpen(ctx context.Context, s *scope) error {
	wait := r.failOpenIn(s.obs.webhook, s.obs.controller)
	if !s.obs.registered || wait < 0 {
		return nil
	}
	if wait > 0 {
		logf.FromContext(ctx).V(1).Info("A component is unavailable; the scheduling-gate webhook stays registered for its grace period",
			"failOpenIn", wait, "webhook", s.obs.webhook.describe(), "controller", s.obs.controller.describe())
		s.requeueIn(wait)
		return nil
	}
	if err := r.deleteWebhookConfiguration(ctx); err != nil {
		return err
	}
	s.obs.registered = false
	logf.FromContext(ctx).Info("Unregistered the scheduling-gate webhook: a component is unavailable (fail open)",
		"webhook", s.obs.webhook.describe(), "controller", s.obs.controller.describe())
	if r.opts.Recorder != nil {
		r.opts.Recorder.Eventf(s.cppc, nil, corev1.EventTypeWarning, v1beta1.ReasonWebhookUnregistered, "Unregister",
			"removed MutatingWebhookConfiguration %s: %s; %s", r.opts.MutatingWebhookConfigurationName,
			s.obs.webhook.describe(), s.obs.controller.describe())
	}
	return nil
}

// failOpenIn returns how long until the fail-open of components is due: negative while every
// one serves, 0 once one has served no replica for the grace period.
func (r *Reconciler) failOpenIn(components ...deploymentState) time.Duration {
	down := r.unavailableFor(time.Now(), components...)
	if down < 0 {
		return down
	}
	return max(r.opts.FailOpenGracePeriod-down, 0)
}

// unavailableFor returns how long the longest-unavailable of the components has served no
// replica as this process saw it, or a negative duration when every one serves; it forgets
// components that serve again.
func (r *Reconciler) unavailableFor(now time.Time, components ...deploymentState) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unavailableSince == nil {
		r.unavailableSince = map[string]time.Time{}
	}
	longest := time.Duration(-1)
	for _, c := range components {
		if c.serving() {
			delete(r.unavailableSince, c.key)
			continue
		}
		since, ok := r.unavailableSince[c.key]
		if !ok {
			since, r.unavailableSince[c.key] = now, now
		}
		longest = max(longest, now.Sub(since))
	}
	return longest
}

// deleteWebhookConfiguration stops archgate's admission: the admission policy's bindings and
// policies first (a policy gating pods with no controller behind it would strand them), then the
// MutatingWebhookConfiguration.
func (r *Reconciler) deleteWebhookConfiguration(ctx context.Context) error {
	if err := r.deleteAdmissionPolicy(ctx); err != nil {
		return err
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	mwc.Name = r.opts.MutatingWebhookConfigurationName
	if err := r.client.Delete(ctx, mwc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting MutatingWebhookConfiguration %s: %w", mwc.Name, err)
	}
	return nil
}

// updateStatus writes the conditions computed from the scope, if they changed.
func (r *Reconciler) updateStatus(ctx context.Context, s *scope) error {
	before := s.cppc.DeepCopy()
	s.obs.missing, s.obs.configured = s.linked.missing, s.linked.configured
	s.obs.mirrorSetProblems = s.linked.mirrorSetProblems
	setConditions(&s.cppc.Status, s.cppc.Generation, conditions(before.Status.Conditions, s.obs))
	s.cppc.Status.OperatorVersion = version.Get().Version
	if equality.Semantic.DeepEqual(before.Status, s.cppc.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, s.cppc, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}
