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
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

const ns = "archgate-system"

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustCA(t *testing.T, now time.Time, validity time.Duration) KeyPair {
	t.Helper()
	ca, err := NewCA("test-ca", now, validity)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestServingReissueReason(t *testing.T) {
	ca := mustCA(t, t0, 300*24*time.Hour)
	other := mustCA(t, t0, 300*24*time.Hour)
	names := ServiceDNSNames(ns, "archgate-webhook")
	leaf, err := NewServingCert(ca, names, t0, 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		leaf    *KeyPair
		trusted []*x509.Certificate
		names   []string
		now     time.Time
		want    string
	}{
		"fresh":                     {leaf: &leaf, trusted: []*x509.Certificate{ca.Cert}, names: names, now: t0, want: ""},
		"names in another order":    {leaf: &leaf, trusted: []*x509.Certificate{ca.Cert}, names: []string{names[1], names[0]}, now: t0, want: ""},
		"missing":                   {trusted: []*x509.Certificate{ca.Cert}, names: names, now: t0, want: reasonMissing},
		"other names":               {leaf: &leaf, trusted: []*x509.Certificate{ca.Cert}, names: names[:1], now: t0, want: reasonDNSNames},
		"just before two thirds":    {leaf: &leaf, trusted: []*x509.Certificate{ca.Cert}, names: names, now: RenewAt(leaf.Cert).Add(-time.Second), want: ""},
		"at two thirds of its life": {leaf: &leaf, trusted: []*x509.Certificate{ca.Cert}, names: names, now: RenewAt(leaf.Cert), want: reasonRenewal},
		"signed by an untrusted CA": {leaf: &leaf, trusted: []*x509.Certificate{other.Cert}, names: names, now: t0, want: reasonUntrusted},
		"trusted among several CAs": {leaf: &leaf, trusted: []*x509.Certificate{other.Cert, ca.Cert}, names: names, now: t0, want: ""},
		"no trusted CA at all":      {leaf: &leaf, names: names, now: t0, want: reasonUntrusted},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := servingReissueReason(tc.leaf, tc.trusted, tc.names, tc.now); got != tc.want {
				t.Errorf("reason = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestServingCertNeverOutlivesCA(t *testing.T) {
	ca := mustCA(t, t0, 30*24*time.Hour)
	leaf, err := NewServingCert(ca, []string{"a.b.svc"}, t0, 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("leaf NotAfter %v, want the CA's %v", leaf.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

func TestParseProvider(t *testing.T) {
	for in, want := range map[string]Provider{"": ProviderSelfSigned, "self-signed": ProviderSelfSigned, "cert-manager": ProviderCertManager, "service-ca": ProviderServiceCA} {
		got, err := ParseProvider(in)
		if err != nil || got != want {
			t.Errorf("ParseProvider(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseProvider("vault"); err == nil {
		t.Error("ParseProvider(vault) succeeded")
	}
}

func TestMetricsProvider(t *testing.T) {
	for p, want := range map[Provider]Provider{
		ProviderSelfSigned: ProviderSelfSigned,
		// cert-manager's self-signed Issuer roots every certificate in itself: the operator's CA
		// signs the metrics certificates instead, so that one published bundle verifies all.
		ProviderCertManager: ProviderSelfSigned,
		ProviderServiceCA:   ProviderServiceCA,
	} {
		if got := p.MetricsProvider(); got != want {
			t.Errorf("%s.MetricsProvider() = %s, want %s", p, got, want)
		}
	}
}

// clock is a settable test clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newManager(c client.Client, clk *clock) *Manager {
	return NewManager(c, c, Options{
		Namespace:       ns,
		CAValidity:      300 * 24 * time.Hour,
		ServingValidity: 90 * 24 * time.Hour,
		Labels:          map[string]string{"app.kubernetes.io/managed-by": "test"},
		Now:             clk.Now,
	})
}

func secret(t *testing.T, c client.Client, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("getting Secret %s: %v", name, err)
	}
	return s
}

// verifies checks that the serving Secret's certificate verifies against bundle for names at now.
func verifies(t *testing.T, s *corev1.Secret, bundle []byte, name string, now time.Time) {
	t.Helper()
	if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
		t.Fatalf("serving Secret does not hold a key pair: %v", err)
	}
	leaf, err := ParseCertificates(s.Data[corev1.TLSCertKey])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		t.Fatal("empty bundle")
	}
	if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now}); err != nil {
		t.Errorf("serving certificate does not verify against the bundle: %v", err)
	}
}

func TestManagerLifecycle(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	clk := &clock{now: t0}
	m := newManager(c, clk)
	names := ServiceDNSNames(ns, "archgate-webhook")
	serving := ServingSecret{Name: "archgate-webhook-serving-cert", DNSNames: names}

	// First run: a CA and a serving certificate appear.
	ca1, err := m.EnsureCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	renew1, err := m.EnsureServing(ctx, ca1, serving)
	if err != nil {
		t.Fatal(err)
	}
	s1 := secret(t, c, serving.Name)
	verifies(t, s1, ca1.Bundle, names[0], clk.now)
	if s1.Type != corev1.SecretTypeTLS || s1.Labels["app.kubernetes.io/managed-by"] != "test" {
		t.Errorf("serving Secret type %q labels %v", s1.Type, s1.Labels)
	}
	if diff := cmp.Diff(ca1.Bundle, s1.Data[KeyServingCA]); diff != "" {
		t.Errorf("ca.crt (-want +got):\n%s", diff)
	}

	// Second run at the same time: nothing changes.
	ca1b, err := m.EnsureCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsureServing(ctx, ca1b, serving); err != nil {
		t.Fatal(err)
	}
	if got := secret(t, c, serving.Name); got.ResourceVersion != s1.ResourceVersion {
		t.Error("serving Secret rewritten although nothing was due")
	}
	if !ca1b.KeyPair.Cert.Equal(ca1.KeyPair.Cert) {
		t.Error("CA replaced although it was not due")
	}

	// At two thirds of the serving certificate's life it is re-issued by the same CA.
	clk.now = renew1
	ca, err := m.EnsureCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsureServing(ctx, ca, serving); err != nil {
		t.Fatal(err)
	}
	s2 := secret(t, c, serving.Name)
	if string(s2.Data[corev1.TLSCertKey]) == string(s1.Data[corev1.TLSCertKey]) {
		t.Fatal("serving certificate not renewed at two thirds of its life")
	}
	verifies(t, s2, ca.Bundle, names[0], clk.now)

	// At two thirds of the CA's life a new CA appears; the old one stays trusted, and the
	// serving certificate, still valid under the old CA, is left alone.
	clk.now = ca1.RenewAt
	ca2, err := m.EnsureCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ca2.KeyPair.Cert.Equal(ca1.KeyPair.Cert) {
		t.Fatal("CA not rotated at two thirds of its life")
	}
	trusted, err := ParseCertificates(ca2.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(trusted) != 2 || !trusted[0].Equal(ca2.KeyPair.Cert) || !trusted[1].Equal(ca1.KeyPair.Cert) {
		t.Fatalf("bundle after rotation has %d CAs, want the new then the old one", len(trusted))
	}
	if _, err := m.EnsureServing(ctx, ca2, serving); err != nil {
		t.Fatal(err)
	}
	s3 := secret(t, c, serving.Name)
	verifies(t, s3, ca2.Bundle, names[0], clk.now)
	if diff := cmp.Diff(ca2.Bundle, s3.Data[KeyServingCA]); diff != "" {
		t.Errorf("ca.crt not updated to the new bundle (-want +got):\n%s", diff)
	}

	// Once the old CA expired it leaves the bundle, and every serving certificate it signed is
	// replaced by one from the new CA.
	clk.now = ca1.KeyPair.Cert.NotAfter.Add(time.Second)
	ca3, err := m.EnsureCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if trusted, _ := ParseCertificates(ca3.Bundle); len(trusted) != 1 || !trusted[0].Equal(ca2.KeyPair.Cert) {
		t.Fatalf("bundle after the old CA expired: %d CAs, want only the new one", len(trusted))
	}
	if _, err := m.EnsureServing(ctx, ca3, serving); err != nil {
		t.Fatal(err)
	}
	verifies(t, secret(t, c, serving.Name), ca3.Bundle, names[0], clk.now)
}

func TestManagerRecoversFromCorruptSecrets(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: DefaultCASecretName}, Data: map[string][]byte{corev1.TLSCertKey: []byte("junk")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "serving"}, Data: map[string][]byte{corev1.TLSCertKey: []byte("junk")}},
	).Build()
	m := newManager(c, &clock{now: t0})
	ca, err := m.EnsureCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsureServing(ctx, ca, ServingSecret{Name: "serving", DNSNames: []string{"x.y.svc"}}); err != nil {
		t.Fatal(err)
	}
	verifies(t, secret(t, c, "serving"), ca.Bundle, "x.y.svc", t0)
}

func TestManagerLogsUnreadableCASecret(t *testing.T) {
	tests := map[string]struct {
		corrupt func(*corev1.Secret)
		wantLog string
		wantNew bool // a new CA is issued
	}{
		"corrupt bundle": {
			corrupt: func(s *corev1.Secret) { s.Data[KeyCABundle] = []byte("junk") },
			wantLog: `"msg"="CA bundle unreadable, rebuilding it`,
		},
		"corrupt key pair": {
			corrupt: func(s *corev1.Secret) { s.Data[corev1.TLSCertKey] = []byte("junk") },
			wantLog: `"msg"="CA key pair unreadable, issuing a new CA"`,
			wantNew: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().Build()
			m := newManager(c, &clock{now: t0})
			first, err := m.EnsureCA(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			s := secret(t, c, DefaultCASecretName)
			tc.corrupt(s)
			if err := c.Update(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			var logged []string
			log := funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})
			ca, err := m.EnsureCA(logf.IntoContext(context.Background(), log))
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(logged, "\n")
			if !strings.Contains(all, tc.wantLog) || !strings.Contains(all, ns+"/"+DefaultCASecretName) {
				t.Errorf("log = %q, want %q naming the Secret %s/%s", all, tc.wantLog, ns, DefaultCASecretName)
			}
			if got := !ca.KeyPair.Cert.Equal(first.KeyPair.Cert); got != tc.wantNew {
				t.Errorf("new CA issued = %t, want %t", got, tc.wantNew)
			}
			if trusted, err := ParseCertificates(secret(t, c, DefaultCASecretName).Data[KeyCABundle]); err != nil || !trusted[0].Equal(ca.KeyPair.Cert) {
				t.Errorf("the stored bundle does not start with the current CA (err %v)", err)
			}
		})
	}
}

func TestSecretSource(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	m := newManager(c, &clock{now: time.Now()})
	src := NewSecretSource(c, types.NamespacedName{Namespace: ns, Name: "serving"}, time.Hour)
	if _, err := src.GetCertificate(nil); err == nil {
		t.Fatal("GetCertificate succeeded before anything was loaded")
	}
	if err := src.Load(ctx); err == nil {
		t.Fatal("Load succeeded without a Secret")
	}
	ca, err := m.EnsureCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsureServing(ctx, ca, ServingSecret{Name: "serving", DNSNames: []string{"x.y.svc"}}); err != nil {
		t.Fatal(err)
	}
	if err := src.Load(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := src.GetCertificate(nil)
	if err != nil || got.Leaf == nil || got.Leaf.DNSNames[0] != "x.y.svc" {
		t.Fatalf("GetCertificate = %v, %v", got, err)
	}
}

// TestManagerPublishesBundle: the ConfigMap holds exactly the bundle the CA Secret trusts,
// through a CA rotation and the old CA's expiry, and never the private key.
func TestManagerPublishesBundle(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	clk := &clock{now: t0}
	m := newManager(c, clk)
	m.opts.BundleConfigMapName = "archgate-metrics-ca"

	check := func(step string, wantCAs int) {
		t.Helper()
		ca, err := m.EnsureCA(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: m.opts.BundleConfigMapName}, cm); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		got := cm.Data[KeyServingCA]
		if got != string(ca.Bundle) || got != string(secret(t, c, DefaultCASecretName).Data[KeyCABundle]) {
			t.Errorf("%s: the published bundle differs from the CA Secret's", step)
		}
		if trusted, err := ParseCertificates([]byte(got)); err != nil || len(trusted) != wantCAs {
			t.Errorf("%s: %d CAs published (err %v), want %d", step, len(trusted), err, wantCAs)
		}
		if len(cm.Data) != 1 || cm.BinaryData != nil || strings.Contains(got, "PRIVATE KEY") {
			t.Errorf("%s: the ConfigMap holds more than the bundle: %v", step, cm.Data)
		}
		if cm.Labels["app.kubernetes.io/managed-by"] != "test" {
			t.Errorf("%s: labels %v", step, cm.Labels)
		}
	}
	check("first CA", 1)
	first, err := m.EnsureCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clk.now = first.RenewAt
	check("rotated", 2)
	clk.now = first.KeyPair.Cert.NotAfter.Add(time.Second)
	check("the old CA expired", 1)
}

// TestPublishedBundleVerifiesServedCertificate: a client that has nothing but the published
// ConfigMap and the Service's name (a ServiceMonitor's tlsConfig.ca and serverName) verifies
// the certificate a metrics endpoint serves from its Secret; another Service's name or the
// system's roots do not.
func TestPublishedBundleVerifiesServedCertificate(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	m := newManager(c, &clock{now: time.Now()})
	m.opts.BundleConfigMapName = "archgate-metrics-ca"
	ca, err := m.EnsureCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsureServing(ctx, ca, ServingSecret{Name: "archgate-controller-metrics-cert", DNSNames: ServiceDNSNames(ns, "archgate-controller-metrics")}); err != nil {
		t.Fatal(err)
	}
	src := NewSecretSource(c, types.NamespacedName{Namespace: ns, Name: "archgate-controller-metrics-cert"}, time.Hour)
	if err := src.Load(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.TLS = &tls.Config{GetCertificate: src.GetCertificate}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes below are expected
	srv.StartTLS()
	defer srv.Close()

	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "archgate-metrics-ca"}, cm); err != nil {
		t.Fatal(err)
	}
	published := x509.NewCertPool()
	if !published.AppendCertsFromPEM([]byte(cm.Data[KeyServingCA])) {
		t.Fatal("the published bundle holds no certificate")
	}
	tests := map[string]struct {
		roots      *x509.CertPool // nil: the system's
		serverName string
		wantErr    string
	}{
		"published CA and the Service's name": {roots: published, serverName: "archgate-controller-metrics.archgate-system.svc"},
		"another Service's name":              {roots: published, serverName: "archgate-webhook-metrics.archgate-system.svc", wantErr: "certificate is valid for"},
		"the system's roots":                  {serverName: "archgate-controller-metrics.archgate-system.svc", wantErr: "certificate signed by unknown authority"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			scraper := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tc.roots, ServerName: tc.serverName}}}
			resp, err := scraper.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("scrape failed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("scrape error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
