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

package certs

import (
	"fmt"
	"strings"
)

// Provider selects who issues the serving certificates of archgate's webhooks.
type Provider string

// Certificate providers.
const (
	// ProviderSelfSigned: the operator keeps its own CA in a Secret, issues and rotates the
	// serving certificates, and injects the CA bundle into the webhook configurations.
	ProviderSelfSigned Provider = "self-signed"
	// ProviderCertManager: the operator creates a self-signed cert-manager Issuer and one
	// Certificate per webhook Service, and annotates the webhook configurations with
	// AnnotationInjectCAFrom so that cert-manager's cainjector fills in the CA bundle.
	ProviderCertManager Provider = "cert-manager"
	// ProviderServiceCA: OpenShift's service-ca operator issues the serving certificates for the
	// Services annotated with AnnotationServingCertSecretName and injects its CA into the webhook
	// configurations annotated with AnnotationInjectCABundle.
	ProviderServiceCA Provider = "service-ca"
)

// Providers returns every Provider, in a new slice.
func Providers() []Provider {
	return []Provider{ProviderSelfSigned, ProviderCertManager, ProviderServiceCA}
}

// ParseProvider returns the provider named s ("" means ProviderSelfSigned).
func ParseProvider(s string) (Provider, error) {
	if s == "" {
		return ProviderSelfSigned, nil
	}
	for _, p := range Providers() {
		if string(p) == s {
			return p, nil
		}
	}
	names := make([]string, 0, len(Providers()))
	for _, p := range Providers() {
		names = append(names, string(p))
	}
	return "", fmt.Errorf("unknown certificate provider %q (want one of %s)", s, strings.Join(names, ", "))
}

// Annotations that hand certificate work to an external issuer.
const (
	// AnnotationInjectCAFrom ("<namespace>/<certificate>") on a webhook configuration makes
	// cert-manager's cainjector copy the Certificate's CA into every webhook's caBundle.
	AnnotationInjectCAFrom = "cert-manager.io/inject-ca-from"
	// AnnotationInjectCABundle ("true") on a webhook configuration makes OpenShift's service-ca
	// operator inject its CA into every webhook's caBundle.
	AnnotationInjectCABundle = "service.beta.openshift.io/inject-cabundle"
	// AnnotationServingCertSecretName on a Service makes OpenShift's service-ca operator write a
	// serving certificate for <service>.<namespace>.svc into the named Secret.
	AnnotationServingCertSecretName = "service.beta.openshift.io/serving-cert-secret-name"
)

// ServiceDNSNames returns the DNS names the apiserver uses to reach a Service.
func ServiceDNSNames(namespace, service string) []string {
	return []string{
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}

// WebhookConfigurationAnnotations returns the annotations a webhook configuration needs so
// that provider injects the CA bundle; certificate names the cert-manager Certificate
// ("<namespace>/<name>"). Self-signed needs none: the operator writes the caBundle itself.
func WebhookConfigurationAnnotations(p Provider, certificate string) map[string]string {
	switch p {
	case ProviderCertManager:
		return map[string]string{AnnotationInjectCAFrom: certificate}
	case ProviderServiceCA:
		return map[string]string{AnnotationInjectCABundle: "true"}
	default:
		return nil
	}
}

// ServiceAnnotations returns the annotations a webhook Service needs so that provider writes
// its serving certificate into secretName. Only service-ca works from Service annotations.
func ServiceAnnotations(p Provider, secretName string) map[string]string {
	if p == ProviderServiceCA {
		return map[string]string{AnnotationServingCertSecretName: secretName}
	}
	return nil
}

// InjectsCABundle reports whether the provider fills in webhook caBundles on its own, so the
// operator must leave the field alone.
func (p Provider) InjectsCABundle() bool { return p != ProviderSelfSigned }

// MetricsProvider returns who issues the serving certificates of the metrics endpoints when p
// issues the webhooks': OpenShift's service-ca, whose CA every namespace already has (the
// ConfigMap openshift-service-ca.crt), and otherwise the operator's own CA, which it
// publishes (Options.BundleConfigMapName). Not cert-manager: its self-signed Issuer makes
// every certificate its own root, so no one CA could be published for a scraper to trust.
func (p Provider) MetricsProvider() Provider {
	if p == ProviderServiceCA {
		return ProviderServiceCA
	}
	return ProviderSelfSigned
}
