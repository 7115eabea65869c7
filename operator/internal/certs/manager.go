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
	"cmp"
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Secret data keys.
const (
	// KeyCABundle holds, in the CA Secret, every CA certificate still trusted (the current one
	// first, then older ones until they expire).
	KeyCABundle = "ca-bundle.crt"
	// KeyServingCA holds, in a serving Secret, the CA bundle that verifies tls.crt (the key
	// cert-manager uses too), and in the public bundle ConfigMap (Options.BundleConfigMapName)
	// the same bundle.
	KeyServingCA = "ca.crt"
)

// Defaults of Options.
const (
	// DefaultCASecretName is the Secret holding the operator's CA.
	DefaultCASecretName = "archgate-ca"
	// DefaultCAValidity is the lifetime of a CA; it is replaced after two thirds of it, and the
	// replaced CA stays in the bundle until it expires.
	DefaultCAValidity = 3 * 365 * 24 * time.Hour
	// DefaultServingValidity is the lifetime of a serving certificate (renewed after 60 days).
	DefaultServingValidity = 90 * 24 * time.Hour
)

// Options configures a Manager.
type Options struct {
	// Namespace holds the CA and serving Secrets.
	Namespace string
	// CASecretName names the CA Secret; DefaultCASecretName when empty.
	CASecretName string
	// BundleConfigMapName, when set, names a ConfigMap in Namespace in which EnsureCA keeps a
	// copy of the CA bundle (key KeyServingCA), without the private key: what clients of the
	// serving certificates (a Prometheus verifying the metrics endpoints) may read.
	BundleConfigMapName string
	// CAValidity and ServingValidity are certificate lifetimes; the defaults when zero.
	CAValidity      time.Duration
	ServingValidity time.Duration
	// Labels are put on every Secret the Manager writes.
	Labels map[string]string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.CASecretName == "" {
		o.CASecretName = DefaultCASecretName
	}
	if o.CAValidity == 0 {
		o.CAValidity = DefaultCAValidity
	}
	if o.ServingValidity == 0 {
		o.ServingValidity = DefaultServingValidity
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Manager keeps the self-signed CA and the serving certificates in Secrets, rotating them
// before they expire. It is safe for concurrent use; run it in one process (the leader).
type Manager struct {
	reader client.Reader
	writer client.Writer
	opts   Options
	mu     sync.Mutex
}

// NewManager returns a Manager that reads with reader (use an uncached reader: Secrets are not
// cached by the operator) and writes with writer.
func NewManager(reader client.Reader, writer client.Writer, opts Options) *Manager {
	return &Manager{reader: reader, writer: writer, opts: opts.withDefaults()}
}

// CA is the current CA and the bundle webhook configurations must trust.
type CA struct {
	// KeyPair signs new serving certificates.
	KeyPair KeyPair
	// Bundle is the PEM bundle of every trusted CA, current first.
	Bundle []byte
	// RenewAt is when the CA is due for rotation.
	RenewAt time.Time
}

// EnsureCA loads the CA from its Secret, creating or rotating it when needed, and returns it.
func (m *Manager) EnsureCA(ctx context.Context) (CA, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	key := types.NamespacedName{Namespace: m.opts.Namespace, Name: m.opts.CASecretName}
	secret := &corev1.Secret{}
	err := m.reader.Get(ctx, key, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return CA{}, fmt.Errorf("reading CA Secret %s: %w", key, err)
	}
	exists := err == nil

	var current *KeyPair
	var bundle []*x509.Certificate
	if exists {
		current, bundle = m.readCA(ctx, secret)
	}
	if !caNeedsRotation(current, now) {
		trusted := trustedCAs(current.Cert, bundle, now)
		pemBundle := EncodeCertificates(trusted)
		if string(pemBundle) != string(secret.Data[KeyCABundle]) {
			// Expired CAs left the bundle.
			secret.Data[KeyCABundle] = pemBundle
			if err := m.writer.Update(ctx, secret); err != nil {
				return CA{}, fmt.Errorf("pruning CA bundle in Secret %s: %w", key, err)
			}
		}
		if err := m.publishBundle(ctx, pemBundle); err != nil {
			return CA{}, err
		}
		return CA{KeyPair: *current, Bundle: pemBundle, RenewAt: RenewAt(current.Cert)}, nil
	}

	next, err := NewCA("archgate-ca@"+now.UTC().Format("2006-01-02T15:04:05Z"), now, m.opts.CAValidity)
	if err != nil {
		return CA{}, err
	}
	older := bundle
	if current != nil {
		older = append([]*x509.Certificate{current.Cert}, bundle...)
	}
	trusted := trustedCAs(next.Cert, older, now)
	pemBundle := EncodeCertificates(trusted)
	data := map[string][]byte{
		corev1.TLSCertKey:       next.CertPEM,
		corev1.TLSPrivateKeyKey: next.KeyPEM,
		KeyCABundle:             pemBundle,
	}
	if err := m.writeTLSSecret(ctx, tlsSecretWrite{read: secret, exists: exists, key: key, data: data}); err != nil {
		return CA{}, fmt.Errorf("writing CA Secret %s: %w", key, err)
	}
	logf.FromContext(ctx).Info("Issued a new CA", "secret", key, "notAfter", next.Cert.NotAfter, "trustedCAs", len(trusted))
	if err := m.publishBundle(ctx, pemBundle); err != nil {
		return CA{}, err
	}
	return CA{KeyPair: next, Bundle: pemBundle, RenewAt: RenewAt(next.Cert)}, nil
}

// publishBundle keeps the public copy of the CA bundle in the ConfigMap BundleConfigMapName
// (nothing when unset). It runs under m.mu, after the CA Secret was written, so the copy never
// trusts a CA the Secret does not, and a new CA is published as soon as it exists (before any
// serving certificate it signs is issued).
func (m *Manager) publishBundle(ctx context.Context, bundle []byte) error {
	if m.opts.BundleConfigMapName == "" {
		return nil
	}
	key := types.NamespacedName{Namespace: m.opts.Namespace, Name: m.opts.BundleConfigMapName}
	cm := &corev1.ConfigMap{}
	switch err := m.reader.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: maps.Clone(m.opts.Labels)},
			Data:       map[string]string{KeyServingCA: string(bundle)},
		}
		if err := m.writer.Create(ctx, cm); err != nil {
			return fmt.Errorf("publishing the CA bundle in ConfigMap %s: %w", key, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	if cm.Data[KeyServingCA] == string(bundle) {
		return nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[KeyServingCA] = string(bundle)
	cm.Labels = mergeLabels(cm.Labels, m.opts.Labels)
	if err := m.writer.Update(ctx, cm); err != nil {
		return fmt.Errorf("publishing the CA bundle in ConfigMap %s: %w", key, err)
	}
	return nil
}

// readCA parses the CA Secret's key pair and bundle. Neither being unreadable is fatal — a
// corrupt key pair is replaced by a new CA, a corrupt bundle is rebuilt from the current CA and
// the serving certificates not signed by it are re-issued — but both are logged with the Secret
// and the parse error: CAs that were trusted until then are dropped, which an administrator
// must be able to trace.
func (m *Manager) readCA(ctx context.Context, secret *corev1.Secret) (*KeyPair, []*x509.Certificate) {
	log := logf.FromContext(ctx).WithValues("secret", client.ObjectKeyFromObject(secret).String())
	var current *KeyPair
	kp, err := ParseKeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	switch {
	case err == nil:
		current = &kp
	case len(secret.Data[corev1.TLSCertKey]) > 0 || len(secret.Data[corev1.TLSPrivateKeyKey]) > 0:
		log.Error(err, "CA key pair unreadable, issuing a new CA")
	}
	if len(secret.Data[KeyCABundle]) == 0 {
		return current, nil
	}
	bundle, err := ParseCertificates(secret.Data[KeyCABundle])
	if err != nil {
		log.Error(err, "CA bundle unreadable, rebuilding it: serving certificates signed by CAs only it held are re-issued", "key", KeyCABundle)
		return current, nil
	}
	return current, bundle
}

// ServingSecret describes a serving certificate Secret.
type ServingSecret struct {
	// Name of the Secret, in Namespace.
	Name string
	// Namespace of the Secret; the Manager's namespace when empty (a namespace's local webhook
	// has its Secret in its own namespace, signed by the same CA).
	Namespace string
	// DNSNames the certificate covers (see ServiceDNSNames).
	DNSNames []string
	// OwnerReferences are set on the Secret when it is created.
	OwnerReferences []metav1.OwnerReference
}

// EnsureServing makes the Secret hold a serving certificate for s.DNSNames signed by ca's
// current CA, issuing a new one when it is missing, covers other names, is due for renewal or
// is no longer trusted by ca.Bundle. It returns when the certificate is due for renewal.
func (m *Manager) EnsureServing(ctx context.Context, ca CA, s ServingSecret) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	key := types.NamespacedName{Namespace: cmp.Or(s.Namespace, m.opts.Namespace), Name: s.Name}
	secret := &corev1.Secret{}
	err := m.reader.Get(ctx, key, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return time.Time{}, fmt.Errorf("reading serving Secret %s: %w", key, err)
	}
	exists := err == nil

	var leaf *KeyPair
	if exists {
		if kp, err := ParseKeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]); err == nil {
			leaf = &kp
		}
	}
	trusted, err := ParseCertificates(ca.Bundle)
	if err != nil {
		return time.Time{}, fmt.Errorf("CA bundle: %w", err)
	}
	reason := servingReissueReason(leaf, trusted, s.DNSNames, now)
	if reason == "" {
		if string(secret.Data[KeyServingCA]) != string(ca.Bundle) {
			secret.Data[KeyServingCA] = ca.Bundle
			if err := m.writer.Update(ctx, secret); err != nil {
				return time.Time{}, fmt.Errorf("updating CA bundle of Secret %s: %w", key, err)
			}
		}
		return RenewAt(leaf.Cert), nil
	}

	next, err := NewServingCert(ca.KeyPair, s.DNSNames, now, m.opts.ServingValidity)
	if err != nil {
		return time.Time{}, err
	}
	data := map[string][]byte{
		corev1.TLSCertKey:       next.CertPEM,
		corev1.TLSPrivateKeyKey: next.KeyPEM,
		KeyServingCA:            ca.Bundle,
	}
	if err := m.writeTLSSecret(ctx, tlsSecretWrite{read: secret, exists: exists, key: key, data: data, owners: s.OwnerReferences}); err != nil {
		return time.Time{}, fmt.Errorf("writing serving Secret %s: %w", key, err)
	}
	logf.FromContext(ctx).Info("Issued a serving certificate", "secret", key, "reason", reason, "notAfter", next.Cert.NotAfter)
	return RenewAt(next.Cert), nil
}

// tlsSecretWrite is a kubernetes.io/tls Secret to write.
type tlsSecretWrite struct {
	// read is the Secret as read; exists says whether it was found.
	read   *corev1.Secret
	exists bool
	key    types.NamespacedName
	data   map[string][]byte
	// owners are set when the Secret is created.
	owners []metav1.OwnerReference
}

// writeTLSSecret updates the Secret (as read, with the manager's labels added) when it exists,
// or creates it with the manager's labels and the owners.
func (m *Manager) writeTLSSecret(ctx context.Context, w tlsSecretWrite) error {
	if w.exists {
		w.read.Data = w.data
		w.read.Type = corev1.SecretTypeTLS
		w.read.Labels = mergeLabels(w.read.Labels, m.opts.Labels)
		return m.writer.Update(ctx, w.read)
	}
	return m.writer.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: w.key.Name, Namespace: w.key.Namespace, Labels: maps.Clone(m.opts.Labels), OwnerReferences: w.owners,
		},
		Type: corev1.SecretTypeTLS,
		Data: w.data,
	})
}

func mergeLabels(have, want map[string]string) map[string]string {
	if len(want) == 0 {
		return have
	}
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}
