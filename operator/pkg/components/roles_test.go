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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/internal/collectors"
)

func TestControllerOptionsDefaults(t *testing.T) {
	defaults := v1beta1.DefaultImageInspectionSettings()
	tests := map[string]struct {
		in      ControllerOptions
		want    func(o *ControllerOptions)
		wantErr string
	}{
		"zero value: the API's image inspection defaults": {
			want: func(o *ControllerOptions) {},
		},
		"zero settings are kept, not re-defaulted": {
			in: ControllerOptions{ImageInspection: &v1beta1.ImageInspectionSettings{CacheSize: 0, CacheTTL: time.Second, Timeout: time.Second, MaxRetries: 0, MaxGateAge: time.Minute, MaxImagesPerPod: 1}},
			want: func(o *ControllerOptions) {
				o.ImageInspection = &v1beta1.ImageInspectionSettings{CacheSize: 0, CacheTTL: time.Second, Timeout: time.Second, MaxRetries: 0, MaxGateAge: time.Minute, MaxImagesPerPod: 1}
			},
		},
		"invalid settings are refused with the field and the value": {
			in:      ControllerOptions{ImageInspection: &v1beta1.ImageInspectionSettings{CacheSize: -1, CacheTTL: time.Second, Timeout: 0, MaxRetries: 2, MaxGateAge: time.Hour, MaxImagesPerPod: 64}},
			wantErr: `invalid controller settings: [imageInspection.cacheSize: Invalid value: -1: must be within [0, 1000000], imageInspection.timeout: Invalid value: "0s": must be within [1s, 5m0s]]`,
		},
		"explicit values are kept; the lease namespace follows the operator's": {
			in: ControllerOptions{Workers: 4, OperatorNamespace: "op", Common: Common{QPS: 7, Burst: 9, MetricsBindAddress: ":1"}},
			want: func(o *ControllerOptions) {
				o.Workers, o.OperatorNamespace, o.LeaderElectionNamespace = 4, "op", "op"
				o.QPS, o.Burst, o.MetricsBindAddress = 7, 9, ":1"
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.in.withDefaults(context.Background())
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := ControllerOptions{
				Common:  Common{QPS: DefaultQPS, Burst: DefaultBurst, MetricsBindAddress: "0", HealthProbeBindAddress: "0", PprofBindAddress: "0"},
				Workers: cmdline.DefaultWorkers, InspectWorkers: cmdline.DefaultInspectWorkers, ImageInspection: &defaults,
				RetryBaseDelay: cmdline.DefaultRetryBaseDelay, RetryMaxDelay: cmdline.DefaultRetryMaxDelay, LeaderElectionID: DefaultLeaderElectionID,
			}
			tc.want(&want)
			if got.Scheme == nil || got.Registerer == nil || got.Logger.GetSink() == nil {
				t.Errorf("scheme %v, registerer %v, logger sink %v: want all set", got.Scheme, got.Registerer, got.Logger.GetSink())
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Common{}, "Scheme", "Registerer", "Logger", "Ready")); diff != "" {
				t.Errorf("withDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegistererReplacesOnlyWhenRestartable(t *testing.T) {
	newCounter := func() prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "archgate_test_total", Help: "test"})
	}
	tests := map[string]struct {
		restartable     bool
		wantSecondError bool
	}{
		"production: a second instance is an error": {restartable: false, wantSecondError: true},
		"restartable: the second instance replaces": {restartable: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			c := Common{Registerer: reg, Restartable: tc.restartable}
			first, second := newCounter(), newCounter()
			first.Add(5)
			if err := collectors.Register(c.registerer(), first); err != nil {
				t.Fatal(err)
			}
			err := collectors.Register(c.registerer(), second)
			if (err != nil) != tc.wantSecondError {
				t.Fatalf("registering the second instance: error %v, want error %t", err, tc.wantSecondError)
			}
			if err != nil {
				return
			}
			second.Add(2)
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			if len(families) != 1 || families[0].GetMetric()[0].GetCounter().GetValue() != 2 {
				t.Errorf("gathered %v, want the second instance's value 2", families)
			}
			// A clash that is not an equal collector is still an error.
			clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "archgate_test_total", Help: "other help"})
			if err := collectors.Register(c.registerer(), clash); err == nil {
				t.Error("registering an inconsistent collector succeeded")
			}
		})
	}
}

// TestRunWebhookRestart serves the webhook twice in one process on the same metrics registry,
// and checks that it answers an AdmissionReview with the gate patch over TLS. The webhook needs
// no apiserver.
func TestRunWebhookRestart(t *testing.T) {
	certDir := t.TempDir()
	caPool := writeServingCert(t, certDir)
	reg := prometheus.NewRegistry()
	cfg := &rest.Config{Host: "https://127.0.0.1:1"} // never contacted
	for run := range 2 {
		port := freePort(t)
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- RunWebhook(ctx, cfg, WebhookOptions{
				Common: Common{Registerer: reg, Restartable: true, Ready: func() { close(ready) }},
				Host:   "127.0.0.1", Port: port, CertDir: certDir, OperatorNamespace: "archgate-system",
			})
		}()
		select {
		case <-ready:
		case err := <-done:
			cancel()
			t.Fatalf("run %d: webhook stopped before serving: %v", run, err)
		case <-time.After(30 * time.Second):
			cancel()
			t.Fatalf("run %d: webhook not ready", run)
		}
		resp := review(t, caPool, port)
		if !resp.Allowed || resp.PatchType == nil || !bytes.Contains(resp.Patch, []byte("multiarch.openshift.io/scheduling-gate")) {
			t.Errorf("run %d: response allowed=%t patch=%s", run, resp.Allowed, resp.Patch)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run %d: RunWebhook returned %v", run, err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "archgate_webhook_pods_gated_total" && f.GetMetric()[0].GetCounter().GetValue() != 1 {
			t.Errorf("gated pods counted by the second instance = %v, want 1", f.GetMetric()[0].GetCounter().GetValue())
		}
	}
}

func review(t *testing.T, pool *x509.CertPool, port int) *admissionv1.AdmissionResponse {
	t.Helper()
	pod, _ := json.Marshal(&corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "app:1"}}},
	})
	body, _ := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: "team", Name: "p", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: pod},
		},
	})
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	res, err := c.Post("https://127.0.0.1:"+strconv.Itoa(port)+WebhookPath, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil {
		t.Fatal("no response")
	}
	return out.Response
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeServingCert writes a serving certificate for 127.0.0.1 as tls.crt/tls.key and returns
// a pool trusting its CA.
func writeServingCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	caPEM, err := WriteSelfSignedServingCert(dir, time.Hour, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return pool
}
