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
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/metricsreader"
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

// scrape GETs https://addr/metrics with token ("" sends none) and returns the status and body.
// The certificate is the server's self-signed one, which no client can verify.
func scrape(ctx context.Context, addr, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
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

	controllerAddr := startControllerAsServiceAccount(t)
	for component, addr := range map[string]string{"operator": operatorMetricsAddress, "controller": controllerAddr} {
		t.Run(component, func(t *testing.T) {
			eventually(t, 30*time.Second, component+" serves metrics to the reader", func() error {
				code, body, err := scrape(ctx, addr, tokens["reader"])
				if err != nil || code != http.StatusOK || !strings.Contains(body, "# TYPE ") {
					return fmt.Errorf("status %d, error %v, body %.200q", code, err, body)
				}
				return nil
			})
			for who, want := range map[string]int{"none": http.StatusUnauthorized, "intruder": http.StatusForbidden} {
				if code, body, err := scrape(ctx, addr, tokens[who]); err != nil || code != want {
					t.Errorf("scrape with token %s: status %d (error %v, body %.200q), want %d", who, code, err, body, want)
				}
			}
		})
	}
}

// startControllerAsServiceAccount runs the pod placement controller with the identity of its
// ServiceAccount (so only the rendered RBAC lets it review its metrics clients) and returns its
// metrics address; it stops when the test ends.
func startControllerAsServiceAccount(t *testing.T) string {
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
			Common:            components.Common{Scheme: scheme, MetricsBindAddress: addr, Restartable: true},
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
