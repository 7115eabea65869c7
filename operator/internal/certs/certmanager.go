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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// cert-manager kinds the operator creates when ProviderCertManager is selected. They are built
// unstructured so the operator does not depend on cert-manager's Go module.
var (
	// IssuerGVK is cert-manager's namespaced Issuer.
	IssuerGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"}
	// CertificateGVK is cert-manager's Certificate.
	CertificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
)

// DefaultIssuerName names the self-signed cert-manager Issuer the operator creates.
const DefaultIssuerName = "archgate-selfsigned"

// CertManagerIssuer returns a self-signed cert-manager Issuer.
func CertManagerIssuer(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"selfSigned": map[string]any{}},
	}}
	u.SetGroupVersionKind(IssuerGVK)
	return u
}

// CertManagerCertificate returns a cert-manager Certificate named name that writes a serving
// certificate for dnsNames into secretName, issued by the Issuer issuer. With a self-signed
// issuer, the certificate is its own CA (ca.crt), which is what cainjector injects.
func CertManagerCertificate(namespace, name, secretName, issuer string, dnsNames []string) *unstructured.Unstructured {
	names := make([]any, 0, len(dnsNames))
	for _, n := range dnsNames {
		names = append(names, n)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"secretName":  secretName,
			"dnsNames":    names,
			"issuerRef":   map[string]any{"kind": "Issuer", "name": issuer},
			"privateKey":  map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
			"duration":    "2160h",
			"renewBefore": "720h",
		},
	}}
	u.SetGroupVersionKind(CertificateGVK)
	return u
}
