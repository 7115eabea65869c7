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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

// testCertPEM returns a self-signed CA certificate named cn, PEM-encoded.
func testCertPEM(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestRegistryConfiguration: registries.conf and per-registry certificates referenced by the
// ClusterPodPlacementConfig reach the controller as mounted copies with their flags; broken
// content is refused before rollout (Degraded names the object, the key and the error; the
// running controller keeps its last good configuration); the operator's proxy variables reach
// both components.
func TestRegistryConfiguration(t *testing.T) {
	ctx := context.Background()
	const ns = "registry-settings"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	conf := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registries"},
		Data: map[string]string{operator.RegistriesConfKey: "[[registry]]\nlocation = \"docker.io\"\n\n[[registry.mirror]]\nlocation = \"mirror.example/docker\"\n\n" +
			"[[registry]]\nlocation = \"evil.example\"\nblocked = true\n"},
	}
	certs := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry-certs"},
		Data:       map[string]string{"mirror.example": testCertPEM(t, "mirror"), "lab.example..5000": testCertPEM(t, "lab")},
	}
	for _, cm := range []*corev1.ConfigMap{conf, certs} {
		if err := k8s.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	install(t, v1beta1.ClusterPodPlacementConfigSpec{
		RegistriesConfConfigmapRef: &v1beta1.NamespacedObjectReference{Namespace: ns, Name: conf.Name},
		RegistryCertsConfigmapRef:  &v1beta1.NamespacedObjectReference{Namespace: ns, Name: certs.Name},
	})

	d := getDeployment(t, operator.ControllerComponentName)
	spec := d.Spec.Template.Spec
	for _, want := range []string{"--registries-conf=" + operator.RegistriesConfDir + "/registries.conf", "--certs-dir=" + operator.CertsDir} {
		if !containsArg(spec.Containers[0].Args, want) {
			t.Errorf("controller args %q lack %q", spec.Containers[0].Args, want)
		}
	}
	var paths []string
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == operator.RegistryCertsName {
			for _, it := range v.ConfigMap.Items {
				paths = append(paths, it.Path)
			}
		}
	}
	slices.Sort(paths)
	if want := []string{"lab.example:5000/ca.crt", "mirror.example/ca.crt"}; !slices.Equal(paths, want) {
		t.Errorf("certs.d paths %q, want %q", paths, want)
	}
	for name, want := range map[string]string{operator.RegistriesConfName: conf.Data[operator.RegistriesConfKey], operator.RegistryCertsName: certs.Data["mirror.example"]} {
		copied := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, key(testNamespace, name), copied); err != nil {
			t.Fatalf("copy %s: %v", name, err)
		}
		found := false
		for _, v := range copied.Data {
			found = found || v == want
		}
		if !found {
			t.Errorf("copy %s lacks the referenced content: %v", name, copied.Data)
		}
	}
	for _, name := range []string{operator.WebhookComponentName, operator.ControllerComponentName} {
		env := getDeployment(t, name).Spec.Template.Spec.Containers[0].Env
		for _, want := range testProxyEnv() {
			if !slices.Contains(env, want) {
				t.Errorf("%s env %v lacks the operator's %s", name, env, want.Name)
			}
		}
	}
	goodHash := d.Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]

	// Broken content: refused before rollout, with a message a user can act on.
	for _, tc := range []struct {
		name     string
		cm       *corev1.ConfigMap
		key, bad string
		wantMsg  []string
	}{
		{"a CA that is not PEM", certs, "mirror.example", "MIIBkTCB+wIJAK not pem",
			[]string{"ConfigMap registry-settings/registry-certs named by spec.registryCertsConfigmapRef, key \"mirror.example\": not PEM"}},
		{"a registries.conf that is not TOML", conf, operator.RegistriesConfKey, "[[registry]\nlocation = ",
			[]string{"ConfigMap registry-settings/registries named by spec.registriesConfConfigmapRef, key \"registries.conf\": invalid registries.conf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := tc.cm.Data[tc.key]
			tc.cm.Data[tc.key] = tc.bad
			if err := k8s.Update(ctx, tc.cm); err != nil {
				t.Fatal(err)
			}
			c := wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionTrue, v1beta1.ReasonRegistryConfigInvalid)
			for _, want := range tc.wantMsg {
				if !strings.Contains(c.Message, want) {
					t.Errorf("Degraded message %q lacks %q", c.Message, want)
				}
			}
			consistently(t, time.Second, "controller not rolled with the broken content", func() error {
				if h := getDeployment(t, operator.ControllerComponentName).Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]; h != goodHash {
					return fmt.Errorf("pod template hash %q, was %q", h, goodHash)
				}
				return nil
			})
			if err := webhookRegistered(); err != nil {
				t.Errorf("the webhook was unregistered over a configuration error: %v", err)
			}
			tc.cm.Data[tc.key] = good
			if err := k8s.Update(ctx, tc.cm); err != nil {
				t.Fatal(err)
			}
			wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionFalse, v1beta1.ReasonAsExpected)
		})
	}
}
