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
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/archgate/archgate/operator/internal/certs"
)

// Names of the operator's own webhook objects (they are part of the installation manifests).
const (
	// DefaultOperatorServiceName is the Service in front of the operator's validating webhooks.
	DefaultOperatorServiceName = "archgate-operator-webhook"
	// DefaultOperatorServingSecretName holds the operator's serving certificate.
	DefaultOperatorServingSecretName = "archgate-operator-serving-cert"
	// DefaultValidatingWebhookConfigurationName registers the operator's validating webhooks.
	DefaultValidatingWebhookConfigurationName = "archgate-operator-validation"
	// OperatorCertificateName is the cert-manager Certificate of the operator's webhooks.
	OperatorCertificateName = "archgate-operator-webhook"
	// DefaultOperatorMetricsServiceName is the Service in front of the operator's metrics
	// endpoint; DefaultOperatorMetricsSecretName holds that endpoint's serving certificate.
	DefaultOperatorMetricsServiceName = "archgate-operator-metrics"
	DefaultOperatorMetricsSecretName  = "archgate-operator-metrics-cert"
)

// WebhookTLSOptions configures WebhookTLS.
type WebhookTLSOptions struct {
	// Namespace of the operator. Required.
	Namespace string
	// ServiceName, SecretName and ValidatingWebhookConfigurationName default to the
	// DefaultOperatorXxx names.
	ServiceName, SecretName, ValidatingWebhookConfigurationName string
	// Provider issues the certificate; ProviderSelfSigned when empty.
	Provider certs.Provider
	// Certs is required with ProviderSelfSigned.
	Certs *certs.Manager
	// Interval between checks; an hour when zero. A failed check is retried after RetryInterval
	// (30s when zero).
	Interval, RetryInterval time.Duration
}

// WebhookTLS keeps the operator's own validating webhooks servable: with the self-signed
// provider it issues and renews the serving certificate and injects the CA bundle into the
// ValidatingWebhookConfiguration; with cert-manager or service-ca it sets the resources and
// annotations that make them do it. It runs on the leader only.
type WebhookTLS struct {
	certLoop
	c      client.Client // uncached
	scheme *runtime.Scheme
	opts   WebhookTLSOptions
}

var (
	_ manager.Runnable               = (*WebhookTLS)(nil)
	_ manager.LeaderElectionRunnable = (*WebhookTLS)(nil)
)

// NewWebhookTLS returns the runnable; c must not be backed by a cache.
func NewWebhookTLS(c client.Client, scheme *runtime.Scheme, opts WebhookTLSOptions) *WebhookTLS {
	if opts.ServiceName == "" {
		opts.ServiceName = DefaultOperatorServiceName
	}
	if opts.SecretName == "" {
		opts.SecretName = DefaultOperatorServingSecretName
	}
	if opts.ValidatingWebhookConfigurationName == "" {
		opts.ValidatingWebhookConfigurationName = DefaultValidatingWebhookConfigurationName
	}
	if opts.Provider == "" {
		opts.Provider = certs.ProviderSelfSigned
	}
	w := &WebhookTLS{c: c, scheme: scheme, opts: opts}
	w.certLoop = newCertLoop("webhook-tls", w.Ensure, opts.Interval, opts.RetryInterval)
	return w
}

// Ensure does one round of work and returns when the certificate is due for renewal (0 when an
// external provider handles renewal).
func (w *WebhookTLS) Ensure(ctx context.Context) (time.Duration, error) {
	o := w.opts
	vwc := admissionregistrationv1ac.ValidatingWebhookConfiguration(o.ValidatingWebhookConfigurationName)
	switch o.Provider {
	case certs.ProviderSelfSigned:
		ca, err := o.Certs.EnsureCA(ctx)
		if err != nil {
			return 0, err
		}
		renewAt, err := o.Certs.EnsureServing(ctx, ca, certs.ServingSecret{Name: o.SecretName, DNSNames: certs.ServiceDNSNames(o.Namespace, o.ServiceName)})
		if err != nil {
			return 0, err
		}
		current := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := w.c.Get(ctx, types.NamespacedName{Name: o.ValidatingWebhookConfigurationName}, current); err != nil {
			return 0, fmt.Errorf("reading ValidatingWebhookConfiguration %s (part of the installation manifests): %w", o.ValidatingWebhookConfigurationName, err)
		}
		// Only the CA bundle of each webhook is the operator's; the rest is the manifests'.
		for _, wh := range current.Webhooks {
			vwc.WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().WithName(wh.Name).
				WithClientConfig(admissionregistrationv1ac.WebhookClientConfig().WithCABundle(ca.Bundle...)))
		}
		if err := apply(ctx, w.c, vwc); err != nil {
			return 0, err
		}
		return time.Until(earliest(renewAt, ca.RenewAt)), nil
	case certs.ProviderCertManager:
		for _, obj := range []*unstructured.Unstructured{
			certs.CertManagerIssuer(o.Namespace, certs.DefaultIssuerName),
			certs.CertManagerCertificate(o.Namespace, OperatorCertificateName, o.SecretName, certs.DefaultIssuerName,
				certs.ServiceDNSNames(o.Namespace, o.ServiceName)),
		} {
			if err := applyUnstructured(ctx, w.c, w.scheme, nil, obj); err != nil {
				return 0, fmt.Errorf("%w (is cert-manager installed?)", err)
			}
		}
		vwc.WithAnnotations(certs.WebhookConfigurationAnnotations(o.Provider, o.Namespace+"/"+OperatorCertificateName))
	case certs.ProviderServiceCA:
		svc := corev1ac.Service(o.ServiceName, o.Namespace).WithAnnotations(certs.ServiceAnnotations(o.Provider, o.SecretName))
		if err := apply(ctx, w.c, svc); err != nil {
			return 0, err
		}
		vwc.WithAnnotations(certs.WebhookConfigurationAnnotations(o.Provider, ""))
	}
	return 0, apply(ctx, w.c, vwc)
}

// MetricsTLSOptions configures MetricsTLS.
type MetricsTLSOptions struct {
	// Namespace of the operator. Required.
	Namespace string
	// ServiceName and SecretName default to DefaultOperatorMetricsServiceName and
	// DefaultOperatorMetricsSecretName.
	ServiceName, SecretName string
	// Provider issues the webhooks' certificates; the metrics certificate comes from
	// Provider.MetricsProvider(). ProviderSelfSigned when empty.
	Provider certs.Provider
	// Certs is required unless the metrics provider is service-ca.
	Certs *certs.Manager
	// Interval between checks; an hour when zero. A failed check is retried after RetryInterval
	// (30s when zero).
	Interval, RetryInterval time.Duration
}

// MetricsTLS keeps the serving certificate of the operator's own metrics endpoint in its
// Secret: issued and renewed by the operator's CA (whose bundle the certs.Manager publishes),
// or, with service-ca, by OpenShift for the annotated metrics Service. It runs on the leader
// only; every replica serves the Secret's certificate (certs.SecretSource).
type MetricsTLS struct {
	certLoop
	c    client.Client // uncached
	opts MetricsTLSOptions
}

var (
	_ manager.Runnable               = (*MetricsTLS)(nil)
	_ manager.LeaderElectionRunnable = (*MetricsTLS)(nil)
)

// NewMetricsTLS returns the runnable; c must not be backed by a cache.
func NewMetricsTLS(c client.Client, opts MetricsTLSOptions) *MetricsTLS {
	opts.ServiceName = cmp.Or(opts.ServiceName, DefaultOperatorMetricsServiceName)
	opts.SecretName = cmp.Or(opts.SecretName, DefaultOperatorMetricsSecretName)
	opts.Provider = cmp.Or(opts.Provider, certs.ProviderSelfSigned)
	m := &MetricsTLS{c: c, opts: opts}
	m.certLoop = newCertLoop("metrics-tls", m.Ensure, opts.Interval, opts.RetryInterval)
	return m
}

// Ensure does one round of work and returns when the certificate is due for renewal (0 when
// service-ca renews it).
func (m *MetricsTLS) Ensure(ctx context.Context) (time.Duration, error) {
	o := m.opts
	if o.Provider.MetricsProvider() == certs.ProviderServiceCA {
		svc := corev1ac.Service(o.ServiceName, o.Namespace).WithAnnotations(certs.ServiceAnnotations(certs.ProviderServiceCA, o.SecretName))
		return 0, apply(ctx, m.c, svc)
	}
	ca, err := o.Certs.EnsureCA(ctx)
	if err != nil {
		return 0, err
	}
	renewAt, err := o.Certs.EnsureServing(ctx, ca, certs.ServingSecret{Name: o.SecretName, DNSNames: certs.ServiceDNSNames(o.Namespace, o.ServiceName)})
	if err != nil {
		return 0, err
	}
	return time.Until(earliest(renewAt, ca.RenewAt)), nil
}

// certLoop is the schedule WebhookTLS and MetricsTLS share: Start runs ensure at once, then every
// interval, on the leader only.
type certLoop struct {
	name            string
	ensure          func(context.Context) (time.Duration, error)
	interval, retry time.Duration
}

// newCertLoop defaults interval to an hour and retry to 30s.
func newCertLoop(name string, ensure func(context.Context) (time.Duration, error), interval, retry time.Duration) certLoop {
	if interval <= 0 {
		interval = time.Hour
	}
	if retry <= 0 {
		retry = 30 * time.Second
	}
	return certLoop{name: name, ensure: ensure, interval: interval, retry: retry}
}

// NeedLeaderElection is true: one writer of certificates.
func (l certLoop) NeedLeaderElection() bool { return true }

// Start runs ensure at once, then every interval (or retry after a failure), until ctx ends.
func (l certLoop) Start(ctx context.Context) error {
	runEvery(logf.IntoContext(ctx, logf.FromContext(ctx).WithName(l.name)), l.ensure, l.interval, l.retry)
	return nil
}

// runEvery runs ensure at once, then every interval (sooner when ensure says the certificate
// is due sooner, after retry when it failed), until ctx ends.
func runEvery(ctx context.Context, ensure func(context.Context) (time.Duration, error), interval, retry time.Duration) {
	log := logf.FromContext(ctx)
	for {
		next := interval
		if renewIn, err := ensure(ctx); err != nil {
			log.Error(err, "Cannot prepare a serving certificate; retrying", "in", retry)
			next = retry
		} else if renewIn > 0 && renewIn < next {
			next = renewIn
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}
