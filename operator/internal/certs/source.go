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
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// DefaultSourceInterval is how often a SecretSource re-reads its Secret.
const DefaultSourceInterval = 10 * time.Second

// SecretSource serves a TLS certificate read from a Secret (tls.crt, tls.key), re-reading it
// periodically so that rotations by the leader, cert-manager or service-ca reach every
// replica. It is a manager.Runnable that runs on every replica, leader or not.
type SecretSource struct {
	reader   client.Reader
	key      types.NamespacedName
	interval time.Duration
	current  atomic.Pointer[tls.Certificate]
	loaded   atomic.Pointer[string] // resourceVersion of the loaded Secret
}

var (
	_ manager.Runnable               = (*SecretSource)(nil)
	_ manager.LeaderElectionRunnable = (*SecretSource)(nil)
)

// NewSecretSource returns a source for the Secret key; interval 0 means DefaultSourceInterval.
func NewSecretSource(reader client.Reader, key types.NamespacedName, interval time.Duration) *SecretSource {
	if interval <= 0 {
		interval = DefaultSourceInterval
	}
	return &SecretSource{reader: reader, key: key, interval: interval}
}

// GetCertificate is a tls.Config.GetCertificate that returns the last certificate loaded.
func (s *SecretSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.current.Load(); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no serving certificate loaded yet from Secret %s", s.key)
}

// Load reads the Secret once and keeps its certificate if it changed.
func (s *SecretSource) Load(ctx context.Context) error {
	secret := &corev1.Secret{}
	if err := s.reader.Get(ctx, s.key, secret); err != nil {
		return err
	}
	if p := s.loaded.Load(); p != nil && *p == secret.ResourceVersion {
		return nil
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("Secret %s: %w", s.key, err)
	}
	s.current.Store(&cert)
	rv := secret.ResourceVersion
	s.loaded.Store(&rv)
	logf.FromContext(ctx).Info("Loaded serving certificate", "secret", s.key, "resourceVersion", rv)
	return nil
}

// Start re-reads the Secret every interval until ctx ends.
func (s *SecretSource) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithValues("secret", s.key)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		if err := s.Load(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.V(1).Info("Serving certificate not loaded yet", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection is false: every replica serves (webhooks, metrics).
func (s *SecretSource) NeedLeaderElection() bool { return false }
