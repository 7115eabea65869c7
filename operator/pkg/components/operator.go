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

package components

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/internal/controller/ppcstatus"
	"github.com/archgate/archgate/operator/internal/webhook/validation"
)

// Operator defaults.
const (
	// DefaultOperatorLeaderElectionID is the operator's leader election lease.
	DefaultOperatorLeaderElectionID = "archgate-operator.multiarch.openshift.io"
	// OperatorContainerName is the operator's container; its image is the components' image
	// when OperatorOptions.Image is empty.
	OperatorContainerName = "operator"
	// EnvImage names the environment variable the archgate binary reads the components'
	// image from.
	EnvImage = "ARCHGATE_IMAGE"
)

// OperatorOptions configure the operator.
type OperatorOptions struct {
	Common
	// Namespace is where the operator runs and rolls out the components. Required.
	Namespace string
	// Image is the archgate image the components run. Empty means the image of the operator's
	// own container (OperatorContainerName of the pod PodName), so that an upgrade of the
	// operator upgrades the components.
	Image string
	// PodName is the operator's own pod, to find Image.
	PodName string
	// CertProvider issues the webhooks' serving certificates: "self-signed" (default),
	// "cert-manager" or "service-ca".
	CertProvider string
	// LeaderElection runs the reconciler on one replica at a time (the validating webhooks are
	// served by every replica). LeaderElectionID defaults to DefaultOperatorLeaderElectionID.
	LeaderElection   bool
	LeaderElectionID string
	// WebhookHost and WebhookPort are where the validating webhooks listen; all interfaces and
	// DefaultWebhookPort when empty.
	WebhookHost string
	WebhookPort int
	// WebhookCertDir, when set, serves the validating webhooks with tls.crt/tls.key from that
	// directory and leaves the operator's own webhook certificate and its
	// ValidatingWebhookConfiguration alone (tests, or certificates managed elsewhere). When
	// empty, the certificate is read from the Secret that CertProvider fills.
	WebhookCertDir string
	// ServiceName, ServingSecretName and ValidatingWebhookConfigurationName name the operator's
	// own webhook objects of the installation manifests; the operator package's defaults when empty.
	ServiceName, ServingSecretName, ValidatingWebhookConfigurationName string
	// MetricsServiceName names the Service of the operator's metrics endpoint (installation
	// manifests) and MetricsSecretName the Secret of that endpoint's serving certificate, which
	// the operator keeps (its CA's, or service-ca's for the Service) unless MetricsCertDir is
	// set; the operator package's defaults when empty.
	MetricsServiceName, MetricsSecretName string
	// MutatingWebhookConfigurationName names the scheduling-gate webhook registration.
	MutatingWebhookConfigurationName string
	// ProxyEnv is passed on to the components' containers. Nil means the operator's own
	// HTTP_PROXY, HTTPS_PROXY and NO_PROXY (and lowercase) variables, read once at start.
	ProxyEnv []corev1.EnvVar
	// Platform is the cluster's platform, which decides the default global pull secret and
	// whether spec.globalPullSecretRef is allowed (seed 004); empty detects it from the API
	// groups the apiserver serves (OpenShift serves config.openshift.io).
	Platform v1beta1.Platform
	// FailOpenGracePeriod is how long a component may stay unavailable before the
	// scheduling-gate webhook is unregistered (fail open); DefaultFailOpenGracePeriod when
	// zero, at once when negative.
	FailOpenGracePeriod time.Duration
}

// Names of what the operator renders in its namespace, for tools that run its output (the
// simulator's kubelet).
const (
	WebhookDeploymentName    = operator.WebhookComponentName
	ControllerDeploymentName = operator.ControllerComponentName
	// DefaultMutatingWebhookConfigurationName is the scheduling-gate webhook's registration.
	DefaultMutatingWebhookConfigurationName = operator.DefaultMutatingWebhookConfigurationName
)

// DefaultFailOpenGracePeriod rides out a rolling restart or a lost node of a component (its
// pods are rescheduled and ready within tens of seconds) without admitting pods ungated.
const DefaultFailOpenGracePeriod = 60 * time.Second

func (o OperatorOptions) withDefaults(ctx context.Context) (OperatorOptions, error) {
	var err error
	o.Common, err = o.Common.withDefaults(ctx)
	if o.Namespace == "" {
		err = errors.Join(err, errors.New("components: OperatorOptions.Namespace is required"))
	}
	switch o.Platform {
	case "", v1beta1.PlatformKubernetes, v1beta1.PlatformOpenShift:
	default:
		err = errors.Join(err, fmt.Errorf("components: platform %q: want %s, %s or empty (detect)", o.Platform, v1beta1.PlatformKubernetes, v1beta1.PlatformOpenShift))
	}
	o.LeaderElectionID = cmp.Or(o.LeaderElectionID, DefaultOperatorLeaderElectionID)
	o.WebhookPort = cmp.Or(o.WebhookPort, DefaultWebhookPort)
	o.FailOpenGracePeriod = max(cmp.Or(o.FailOpenGracePeriod, DefaultFailOpenGracePeriod), 0)
	o.ServiceName = cmp.Or(o.ServiceName, operator.DefaultOperatorServiceName)
	o.ServingSecretName = cmp.Or(o.ServingSecretName, operator.DefaultOperatorServingSecretName)
	o.ValidatingWebhookConfigurationName = cmp.Or(o.ValidatingWebhookConfigurationName, operator.DefaultValidatingWebhookConfigurationName)
	o.MetricsServiceName = cmp.Or(o.MetricsServiceName, operator.DefaultOperatorMetricsServiceName)
	o.MetricsSecretName = cmp.Or(o.MetricsSecretName, operator.DefaultOperatorMetricsSecretName)
	o.MutatingWebhookConfigurationName = cmp.Or(o.MutatingWebhookConfigurationName, operator.DefaultMutatingWebhookConfigurationName)
	if o.ProxyEnv == nil {
		o.ProxyEnv = operator.ProxyEnv(os.LookupEnv)
	}
	return o, err
}

// RunOperator runs the operator until ctx is done: the ClusterPodPlacementConfig reconciler
// (leader only), which rolls out, configures and removes the webhook and the pod placement
// controller; the validating webhooks for the multiarch.openshift.io API (every replica); and,
// unless WebhookCertDir is set, the upkeep of the operator's own webhook certificate.
// Readiness (/readyz, and the Ready callback) means the validating webhooks serve.
func RunOperator(ctx context.Context, cfg *rest.Config, opts OperatorOptions) error {
	opts, restCfg, err := start(ctx, cfg, opts, "operator")
	if err != nil {
		return err
	}
	provider, err := certs.ParseProvider(opts.CertProvider)
	if err != nil {
		return err
	}
	uncached, err := client.New(restCfg, client.Options{Scheme: opts.Scheme})
	if err != nil {
		return fmt.Errorf("creating the operator's client: %w", err)
	}
	if opts.Image == "" {
		if opts.Image, err = ownImage(ctx, uncached, opts.Namespace, opts.PodName); err != nil {
			return err
		}
	}
	if opts.Platform == "" {
		if opts.Platform, err = detectPlatform(restCfg); err != nil {
			return err
		}
	}
	deps := operatorDeps{uncached: uncached, provider: provider}
	if opts.WebhookCertDir == "" {
		deps.certSource = certs.NewSecretSource(uncached, types.NamespacedName{Namespace: opts.Namespace, Name: opts.ServingSecretName}, 0)
	}
	if opts.MetricsBindAddress != "0" && opts.MetricsCertDir == "" {
		deps.metricsSource = certs.NewSecretSource(uncached, types.NamespacedName{Namespace: opts.Namespace, Name: opts.MetricsSecretName}, 0)
	}
	if provider.MetricsProvider() == certs.ProviderSelfSigned {
		deps.certManager = certs.NewManager(uncached, uncached, certs.Options{
			Namespace:           opts.Namespace,
			BundleConfigMapName: operator.MetricsCAConfigMapName,
			Labels:              operator.ManagedLabels("archgate-operator"),
		})
	}
	mgr, err := newOperatorManager(restCfg, opts, deps)
	if err != nil {
		return err
	}
	if err := setUpOperator(mgr, opts, deps); err != nil {
		return err
	}
	if err := addOperatorServing(mgr, opts, deps); err != nil {
		return err
	}
	if err := addOperatorMetricsTLS(mgr, opts, deps); err != nil {
		return err
	}
	opts.Logger.WithName("operator").Info("Starting the operator", "namespace", opts.Namespace, "image", opts.Image, "platform", opts.Platform,
		"certProvider", provider, "leaderElection", opts.LeaderElection)
	return mgr.Start(ctx)
}

// newOperatorManager creates the operator's manager: its cache, leader election, the
// validating webhooks' server, serving deps.certSource's certificate (nil: the files in
// WebhookCertDir), and the metrics server, serving deps.metricsSource's (nil: the files in
// MetricsCertDir, or a generated one).
func newOperatorManager(restCfg *rest.Config, opts OperatorOptions, deps operatorDeps) (manager.Manager, error) {
	serverOpts := webhook.Options{Host: opts.WebhookHost, Port: opts.WebhookPort, TLSOpts: opts.tlsOpts()}
	if deps.certSource == nil {
		serverOpts.CertDir, serverOpts.CertName, serverOpts.KeyName = opts.WebhookCertDir, TLSCertName, TLSKeyName
	} else {
		serverOpts.TLSOpts = append(serverOpts.TLSOpts, func(c *tls.Config) { c.GetCertificate = deps.certSource.GetCertificate })
	}
	mopts := opts.managerOptions()
	if deps.metricsSource != nil {
		mopts.Metrics.TLSOpts = append(mopts.Metrics.TLSOpts, func(c *tls.Config) { c.GetCertificate = deps.metricsSource.GetCertificate })
	}
	mopts.Cache = operator.CacheOptions(opts.Namespace)
	mopts.WebhookServer = webhook.NewServer(serverOpts)
	mopts.LeaderElection = opts.LeaderElection
	mopts.LeaderElectionID = opts.LeaderElectionID
	mopts.LeaderElectionNamespace = opts.Namespace
	mopts.LeaderElectionReleaseOnCancel = true
	mgr, err := manager.New(restCfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("creating the operator manager: %w", err)
	}
	return mgr, nil
}

// operatorDeps is what the operator's parts share besides the manager.
type operatorDeps struct {
	// uncached reads and writes without the manager's cache.
	uncached client.Client
	// provider issues the serving certificates; certManager keeps them when self-signed.
	provider    certs.Provider
	certManager *certs.Manager
	// certSource serves the operator's own certificate from its Secret; nil when it comes
	// from WebhookCertDir.
	certSource *certs.SecretSource
	// metricsSource serves the operator's metrics certificate from its Secret; nil when the
	// operator serves no metrics or they come from MetricsCertDir.
	metricsSource *certs.SecretSource
}

// setUpOperator registers the validating webhooks and the ClusterPodPlacementConfig reconciler.
func setUpOperator(mgr manager.Manager, opts OperatorOptions, deps operatorDeps) error {
	validation.Register(mgr.GetWebhookServer(), deps.uncached, opts.Scheme, opts.Platform)
	r, err := operator.New(mgr.GetClient(), deps.uncached, opts.Scheme, operator.Options{
		Namespace:                        opts.Namespace,
		Platform:                         opts.Platform,
		Image:                            opts.Image,
		CertProvider:                     deps.provider,
		Certs:                            deps.certManager,
		MutatingWebhookConfigurationName: opts.MutatingWebhookConfigurationName,
		Recorder:                         mgr.GetEventRecorder("archgate-operator"),
		ProxyEnv:                         opts.ProxyEnv,
		FailOpenGracePeriod:              opts.FailOpenGracePeriod,
	})
	if err != nil {
		return err
	}
	if err := ppcstatus.SetupWithManager(mgr, operator.LocalControllerComponentName, operator.LocalWebhookComponentName); err != nil {
		return fmt.Errorf("setting up the PodPlacementConfig status controller: %w", err)
	}
	if err := r.Local().SetupWithManager(mgr); err != nil {
		return err
	}
	return r.SetupWithManager(mgr)
}

// addOperatorServing adds the upkeep of the operator's own serving certificate (unless it
// comes from WebhookCertDir, certSource nil) and the probes: ready once the validating
// webhooks serve with a certificate.
func addOperatorServing(mgr manager.Manager, opts OperatorOptions, deps operatorDeps) error {
	serving := mgr.GetWebhookServer().StartedChecker()
	certSource := deps.certSource
	if certSource != nil {
		if err := mgr.Add(certSource); err != nil {
			return err
		}
		if err := mgr.Add(operator.NewWebhookTLS(deps.uncached, opts.Scheme, operator.WebhookTLSOptions{
			Namespace:                          opts.Namespace,
			ServiceName:                        opts.ServiceName,
			SecretName:                         opts.ServingSecretName,
			ValidatingWebhookConfigurationName: opts.ValidatingWebhookConfigurationName,
			Provider:                           deps.provider,
			Certs:                              deps.certManager,
		})); err != nil {
			return err
		}
		started := serving
		serving = func(req *http.Request) error {
			if _, err := certSource.GetCertificate(nil); err != nil {
				return err
			}
			return started(req)
		}
	}
	return addProbes(mgr, probes{check: func() error { return serving(&http.Request{}) }, onReady: opts.Ready})
}

// addOperatorMetricsTLS adds the upkeep of the operator's metrics serving certificate and its
// reading on every replica, when it comes from the Secret (deps.metricsSource). Until the
// Secret exists (the first seconds of the first install) a scrape fails its TLS handshake.
func addOperatorMetricsTLS(mgr manager.Manager, opts OperatorOptions, deps operatorDeps) error {
	if deps.metricsSource == nil {
		return nil
	}
	return errors.Join(mgr.Add(deps.metricsSource), mgr.Add(operator.NewMetricsTLS(deps.uncached, operator.MetricsTLSOptions{
		Namespace:   opts.Namespace,
		ServiceName: opts.MetricsServiceName,
		SecretName:  opts.MetricsSecretName,
		Provider:    deps.provider,
		Certs:       deps.certManager,
	})))
}

// detectPlatform asks the apiserver which API groups it serves: OpenShift serves
// config.openshift.io.
func detectPlatform(cfg *rest.Config) (v1beta1.Platform, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return "", fmt.Errorf("listing the apiserver's API groups to detect the platform: %w", err)
	}
	names := make([]string, 0, len(groups.Groups))
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	return v1beta1.PlatformFromGroups(names), nil
}

// ownImage returns the image of the operator's own container.
func ownImage(ctx context.Context, c client.Reader, namespace, podName string) (string, error) {
	if podName == "" {
		return "", fmt.Errorf("components: the components' image is unknown: set OperatorOptions.Image ($%s) or PodName ($POD_NAME)", EnvImage)
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: podName}, pod); err != nil {
		return "", fmt.Errorf("reading the operator's own pod %s/%s to find the components' image: %w", namespace, podName, err)
	}
	for _, ctr := range pod.Spec.Containers {
		if ctr.Name == OperatorContainerName {
			return ctr.Image, nil
		}
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Image, nil
	}
	return "", fmt.Errorf("pod %s/%s has no container", namespace, podName)
}
