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
	if opts.Interval <= 0 {
		opts.Interval = time.Hour
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = 30 * time.Second
	}
	return &WebhookTLS{c: c, scheme: scheme, opts: opts}
}

// NeedLeaderElection is true: one writer of certificates.
func (w *WebhookTLS) NeedLeaderElection() bool { return true }

// Start runs Ensure at once, then every Interval (or RetryInterval after a failure), until ctx ends.
func (w *WebhookTLS) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("webhook-tls")
	for {
		next := w.opts.Interval
		if renewIn, err := w.Ensure(ctx); err != nil {
			log.Error(err, "Cannot prepare the operator's webhook certificate; retrying", "in", w.opts.RetryInterval)
			next = w.opts.RetryInterval
		} else if renewIn > 0 && renewIn < next {
			next = renewIn
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
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
