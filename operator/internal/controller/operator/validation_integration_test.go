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
	"crypto/x509"
	"errors"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// refused checks that err is the webhook's refusal carrying every wanted fragment, as the user
// sees it in kubectl.
func refused(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted; want refused with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err.Error(), w)
		}
	}
	t.Logf("user sees: %s", err.Error())
}

// TestValidationThroughAPIServer sends every refusal through the apiserver and the
// ValidatingWebhookConfiguration shipped in deploy/.
func TestValidationThroughAPIServer(t *testing.T) {
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-validation"}}); err != nil {
		t.Fatal(err)
	}

	err := k8s.Create(ctx, objects.PodPlacementConfig("team-validation", "prefer-arm").WithPriority(10).WithPlatforms(objects.Platform("arm64", 10)).Build())
	refused(t, err, `admission webhook "podplacementconfigs.validation.multiarch.openshift.io" denied the request`,
		`PodPlacementConfig team-validation/prefer-arm is invalid: metadata.namespace: Forbidden: no ClusterPodPlacementConfig "cluster" exists`)

	createCluster(t, v1beta1.ClusterPodPlacementConfigSpec{})
	if err := k8s.Create(ctx, objects.PodPlacementConfig("team-validation", "prefer-arm").WithPriority(10).WithPlatforms(objects.Platform("arm64", 10), objects.Platform("amd64", 11)).Build()); err != nil {
		t.Fatalf("valid PodPlacementConfig refused: %v", err)
	}
	refused(t, k8s.Create(ctx, objects.PodPlacementConfig("team-validation", "prefer-x86").WithPriority(10).Build()),
		`PodPlacementConfig team-validation/prefer-x86 is invalid: spec.priority: Invalid value: 10: already used by PodPlacementConfig team-validation/prefer-arm`)

	// CEL refuses repeated architectures before the webhook is called; the webhook's own check
	// answers for clients that skip schema validation (see the unit tests).
	refused(t, k8s.Create(ctx, objects.PodPlacementConfig("team-validation", "twice").WithPriority(11).WithPlatforms(objects.Platform("s390x", 10), objects.Platform("s390x", 11)).Build()), "spec.plugins.nodeAffinityScoring.platforms")

	// An update to a taken priority is refused too.
	second := objects.PodPlacementConfig("team-validation", "prefer-x86").WithPriority(20).Build()
	if err := k8s.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	// The operator writes the new configuration's status meanwhile: read it again on a conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
			return err
		}
		second.Spec.Priority = 10
		return k8s.Update(ctx, second)
	})
	refused(t, err, "spec.priority: Invalid value: 10: already used by PodPlacementConfig team-validation/prefer-arm")

	// spec.components is refused when written, by its own field, not later by a Deployment that
	// cannot create pods.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cppc := getCluster(t)
		cppc.Spec.Components = &v1beta1.ComponentsConfig{
			Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Value: "infra"}},
			PriorityClassName: "Critical",
		}
		return k8s.Update(ctx, cppc)
	})
	refused(t, err, `ClusterPodPlacementConfig cluster is invalid`,
		`spec.components.tolerations[0].value: Invalid value: "infra": must be empty when operator is Exists`,
		`spec.components.priorityClassName: Invalid value: "Critical"`)

	// A placement rule whose expression does not compile is refused when written, by its field,
	// with CEL's message; a valid one is admitted.
	rules := func(expression string) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cppc := getCluster(t)
			cppc.Spec.PlacementRules = []v1beta1.PlacementRule{
				{Name: "ml", Expression: "object.metadata.?labels.?team.orValue('') == 'ml'", RequiredArchitectures: []string{"arm64"}},
				{Name: "second", Expression: expression, RequiredArchitectures: []string{"amd64"}},
			}
			return k8s.Update(ctx, cppc)
		})
	}
	refused(t, rules("object.metadata.labels.team =="), `ClusterPodPlacementConfig cluster is invalid`,
		`spec.placementRules[1].expression: Invalid value: "object.metadata.labels.team ==": ERROR: <input>:1:`, "Syntax error")
	refused(t, rules("object.metadata.name"), `spec.placementRules[1].expression: Invalid value: "object.metadata.name": must evaluate to bool but got dyn`)
	if err := rules("object.metadata.namespace.startsWith('batch-')"); err != nil {
		t.Errorf("valid placement rules refused: %v", err)
	}

	err = k8s.Delete(ctx, &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}})
	refused(t, err, `admission webhook "clusterpodplacementconfigs.validation.multiarch.openshift.io" denied the request`,
		`ClusterPodPlacementConfig "cluster" cannot be deleted: 2 PodPlacementConfig(s) still depend on it (team-validation/prefer-arm, team-validation/prefer-x86)`)
	if !apierrors.IsConflict(err) {
		t.Errorf("deletion refused with %v, want a Conflict", apierrors.ReasonForError(err))
	}
	if err := k8s.DeleteAllOf(ctx, &v1beta1.PodPlacementConfig{}, client.InNamespace("team-validation")); err != nil {
		t.Fatal(err)
	}
	deleteCluster(t)
}

// TestOperatorWebhookTLS checks that the operator makes its own validating webhooks servable:
// a serving certificate and a CA bundle injected into the ValidatingWebhookConfiguration, or
// the annotations that have cert-manager or service-ca do it.
func TestOperatorWebhookTLS(t *testing.T) {
	ctx := context.Background()
	// A stand-in for the shipped configuration: the envtest copy must keep its own caBundle.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "tls-test"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "a.validation.multiarch.openshift.io",
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: testNamespace, Name: operator.DefaultOperatorServiceName, Path: ptr.To("/x"),
			}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}},
			}},
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			SideEffects:   ptr.To(admissionregistrationv1.SideEffectClassNone),
		}},
	}
	if err := k8s.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	defer k8s.Delete(ctx, vwc)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: operator.DefaultOperatorServiceName},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}},
	}
	if err := k8s.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	defer k8s.Delete(ctx, svc)

	uncached, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	certManager := certs.NewManager(uncached, uncached, certs.Options{Namespace: testNamespace})
	tlsFor := func(p certs.Provider) *operator.WebhookTLS {
		return operator.NewWebhookTLS(uncached, scheme, operator.WebhookTLSOptions{
			Namespace: testNamespace, Provider: p, Certs: certManager, ValidatingWebhookConfigurationName: vwc.Name,
		})
	}

	renewIn, err := tlsFor(certs.ProviderSelfSigned).Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if renewIn <= 0 {
		t.Errorf("renewal in %v", renewIn)
	}
	if err := k8s.Get(ctx, key("", vwc.Name), vwc); err != nil {
		t.Fatal(err)
	}
	src := certs.NewSecretSource(uncached, key(testNamespace, operator.DefaultOperatorServingSecretName), 0)
	if err := src.Load(ctx); err != nil {
		t.Fatalf("operator serving certificate: %v", err)
	}
	leaf, _ := src.GetCertificate(nil)
	caPool, err := certs.ParseCertificates(vwc.Webhooks[0].ClientConfig.CABundle)
	if err != nil || len(caPool) == 0 || leaf.Leaf.CheckSignatureFrom(caPool[0]) != nil {
		t.Errorf("caBundle %d certificates (err %v) does not sign the serving certificate", len(caPool), err)
	}

	if _, err := tlsFor(certs.ProviderServiceCA).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, key("", vwc.Name), vwc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, key(testNamespace, svc.Name), svc); err != nil {
		t.Fatal(err)
	}
	if vwc.Annotations[certs.AnnotationInjectCABundle] != "true" || svc.Annotations[certs.AnnotationServingCertSecretName] != operator.DefaultOperatorServingSecretName {
		t.Errorf("service-ca annotations: webhook configuration %v, service %v", vwc.Annotations, svc.Annotations)
	}

	// Without cert-manager's CRDs the error says what is missing.
	if _, err := tlsFor(certs.ProviderCertManager).Ensure(ctx); err == nil || !strings.Contains(err.Error(), "is cert-manager installed?") {
		t.Errorf("cert-manager provider without cert-manager: %v", err)
	}
}

// TestOperatorMetricsTLS checks the upkeep of the operator's metrics certificate: issued by
// the operator's CA, whose published bundle verifies it for the metrics Service's name, with
// the self-signed and the cert-manager providers (cert-manager's self-signed Issuer has no one
// CA to publish); requested from service-ca with its annotation on the metrics Service.
func TestOperatorMetricsTLS(t *testing.T) {
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: operator.DefaultOperatorMetricsServiceName},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: operator.MetricsPort}}},
	}
	if err := k8s.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	defer k8s.Delete(ctx, svc)
	uncached, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	certManager := certs.NewManager(uncached, uncached, certs.Options{Namespace: testNamespace, BundleConfigMapName: operator.MetricsCAConfigMapName})
	const secretName = "metrics-tls-test"
	defer k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: secretName}})
	metricsTLS := func(p certs.Provider) *operator.MetricsTLS {
		return operator.NewMetricsTLS(uncached, operator.MetricsTLSOptions{Namespace: testNamespace, SecretName: secretName, Provider: p, Certs: certManager})
	}

	for _, p := range []certs.Provider{certs.ProviderSelfSigned, certs.ProviderCertManager} {
		if renewIn, err := metricsTLS(p).Ensure(ctx); err != nil || renewIn <= 0 {
			t.Fatalf("%s: renewal in %v, error %v", p, renewIn, err)
		}
		secret, cm := &corev1.Secret{}, &corev1.ConfigMap{}
		if err := errors.Join(k8s.Get(ctx, key(testNamespace, secretName), secret), k8s.Get(ctx, key(testNamespace, operator.MetricsCAConfigMapName), cm)); err != nil {
			t.Fatal(err)
		}
		leaf, err := certs.ParseCertificates(secret.Data[corev1.TLSCertKey])
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM([]byte(cm.Data[certs.KeyServingCA]))
		name := operator.DefaultOperatorMetricsServiceName + "." + testNamespace + ".svc"
		if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("%s: the metrics certificate does not verify against the published bundle for %s: %v", p, name, err)
		}
	}

	if _, err := metricsTLS(certs.ProviderServiceCA).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, key(testNamespace, svc.Name), svc); err != nil {
		t.Fatal(err)
	}
	if got := svc.Annotations[certs.AnnotationServingCertSecretName]; got != secretName {
		t.Errorf("service-ca: metrics Service annotation %s=%q, want %q", certs.AnnotationServingCertSecretName, got, secretName)
	}
}
