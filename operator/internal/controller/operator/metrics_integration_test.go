//go:build integration

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

package operator_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/testing/metricsreader"
)

// freeAddress returns a 127.0.0.1 address with a port that was free a moment ago.
func freeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// insecure scrapes without verifying the server's certificate: what is tested is who may read.
var insecure = &tls.Config{InsecureSkipVerify: true}

// scrape GETs https://addr/metrics with token ("" sends none) over TLS configured by tlsConfig
// and returns the status and body.
func scrape(ctx context.Context, addr, token string, tlsConfig *tls.Config) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestMetricsEndpointsAreAuthenticated scrapes the operator (running as its ServiceAccount with
// operator/config/rbac) and a pod placement controller (running as its ServiceAccount with the
// RBAC the operator renders) as Prometheus does — a ServiceAccount token from the TokenRequest
// API, bound to archgate-metrics-reader — and as clients that must be refused.
func TestMetricsEndpointsAreAuthenticated(t *testing.T) {
	ctx := context.Background()
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	reader := metricsreader.Reader{Namespace: testNamespace, ServiceAccount: prometheusSA}
	if err := metricsreader.Grant(ctx, env.Config, reader); err != nil {
		t.Fatal(err)
	}
	intruder := metricsreader.Reader{Namespace: testNamespace, ServiceAccount: "not-a-metrics-reader"}
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: intruder.ServiceAccount}}); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{"none": ""}
	for name, r := range map[string]metricsreader.Reader{"reader": reader, "intruder": intruder} {
		token, err := metricsreader.Token(ctx, env.Config, r, 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		tokens[name] = token
	}

	controllerAddr := startControllerAsServiceAccount(t, "")
	for component, addr := range map[string]string{"operator": operatorMetricsAddress, "controller": controllerAddr} {
		t.Run(component, func(t *testing.T) {
			eventually(t, 30*time.Second, component+" serves metrics to the reader", func() error {
				code, body, err := scrape(ctx, addr, tokens["reader"], insecure)
				if err != nil || code != http.StatusOK || !strings.Contains(body, "# TYPE ") {
					return fmt.Errorf("status %d, error %v, body %.200q", code, err, body)
				}
				return nil
			})
			for who, want := range map[string]int{"none": http.StatusUnauthorized, "intruder": http.StatusForbidden} {
				if code, body, err := scrape(ctx, addr, tokens[who], insecure); err != nil || code != want {
					t.Errorf("scrape with token %s: status %d (error %v, body %.200q), want %d", who, code, err, body, want)
				}
			}
		})
	}
}

// startControllerAsServiceAccount runs the pod placement controller with the identity of its
// ServiceAccount (so only the rendered RBAC lets it review its metrics clients), serving its
// metrics with the certificate in certDir ("": one it generates), and returns its metrics
// address; it stops when the test ends.
func startControllerAsServiceAccount(t *testing.T, certDir string) string {
	t.Helper()
	addr, err := freeAddress()
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + testNamespace + ":" + operator.ControllerComponentName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + testNamespace, "system:authenticated"},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- components.RunPlacementController(ctx, cfg, components.ControllerOptions{
			// Restartable: the operator of this process registered controller-runtime's
			// metrics already.
			Common:            components.Common{Scheme: scheme, MetricsBindAddress: addr, MetricsCertDir: certDir, Restartable: true},
			OperatorNamespace: testNamespace,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	return addr
}

// TestMetricsCertificatesVerify: the metrics endpoints serve certificates that a scraper holding
// only the CA bundle the operator publishes (ConfigMap archgate-metrics-ca, what the shipped
// ServiceMonitors trust) verifies for the metrics Service's name, and for no other Service's:
// the rendered Deployments mount their Secrets where --metrics-cert-dir points, and the
// operator's own endpoint (its certificate read from its Secret) and a controller given the
// rendered Secret's files are scraped that way.
func TestMetricsCertificatesVerify(t *testing.T) {
	ctx := context.Background()
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	cm := &corev1.ConfigMap{}
	eventually(t, 30*time.Second, "the CA bundle published", func() error {
		return k8s.Get(ctx, key(testNamespace, operator.MetricsCAConfigMapName), cm)
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(cm.Data[certs.KeyServingCA])) {
		t.Fatalf("ConfigMap %s holds no CA certificate in %s: %v", operator.MetricsCAConfigMapName, certs.KeyServingCA, cm.Data)
	}
	serverName := func(service string) string { return service + "." + testNamespace + ".svc" }

	secrets := map[string]*corev1.Secret{}
	for _, c := range []struct{ deployment, secret, service string }{
		{operator.WebhookComponentName, operator.WebhookMetricsSecretName, operator.WebhookMetricsServiceName},
		{operator.ControllerComponentName, operator.ControllerMetricsSecretName, operator.ControllerMetricsServiceName},
	} {
		spec := getDeployment(t, c.deployment).Spec.Template.Spec
		mounted := slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
			return v.Name == "metrics-cert" && v.Secret != nil && v.Secret.SecretName == c.secret
		}) && slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == "metrics-cert" && m.MountPath == operator.MetricsCertDir
		})
		if !mounted || !containsArg(spec.Containers[0].Args, "--metrics-cert-dir="+operator.MetricsCertDir) {
			t.Errorf("Deployment %s: Secret %s not mounted at --metrics-cert-dir=%s (volumes %+v, args %q)",
				c.deployment, c.secret, operator.MetricsCertDir, spec.Volumes, spec.Containers[0].Args)
		}
		secret := &corev1.Secret{}
		if err := k8s.Get(ctx, key(testNamespace, c.secret), secret); err != nil {
			t.Fatal(err)
		}
		leaf, err := certs.ParseCertificates(secret.Data[corev1.TLSCertKey])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: serverName(c.service)}); err != nil {
			t.Errorf("Secret %s does not verify against the published CA for %s: %v", c.secret, serverName(c.service), err)
		}
		secrets[c.service] = secret
	}

	reader := metricsreader.Reader{Namespace: testNamespace, ServiceAccount: prometheusSA}
	if err := metricsreader.Grant(ctx, env.Config, reader); err != nil {
		t.Fatal(err)
	}
	token, err := metricsreader.Token(ctx, env.Config, reader, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		components.TLSCertName: secrets[operator.ControllerMetricsServiceName].Data[corev1.TLSCertKey],
		components.TLSKeyName:  secrets[operator.ControllerMetricsServiceName].Data[corev1.TLSPrivateKeyKey],
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	controllerAddr := startControllerAsServiceAccount(t, dir)
	for component, target := range map[string]struct{ addr, service string }{
		"operator":   {operatorMetricsAddress, operator.DefaultOperatorMetricsServiceName},
		"controller": {controllerAddr, operator.ControllerMetricsServiceName},
	} {
		t.Run(component, func(t *testing.T) {
			verified := &tls.Config{RootCAs: roots, ServerName: serverName(target.service)}
			eventually(t, 30*time.Second, component+" serves a certificate of the published CA", func() error {
				code, body, err := scrape(ctx, target.addr, token, verified)
				if err != nil || code != http.StatusOK || !strings.Contains(body, "# TYPE ") {
					return fmt.Errorf("status %d, error %v, body %.200q", code, err, body)
				}
				return nil
			})
			other := &tls.Config{RootCAs: roots, ServerName: serverName(operator.WebhookMetricsServiceName)}
			if _, _, err := scrape(ctx, target.addr, token, other); err == nil || !strings.Contains(err.Error(), "certificate is valid for") {
				t.Errorf("scrape verified for another Service's name: error %v, want a name mismatch", err)
			}
		})
	}
}
