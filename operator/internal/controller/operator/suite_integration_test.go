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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"
)

// One control plane and one operator for the package: the tests run one after the other and
// each leaves no ClusterPodPlacementConfig behind.
var (
	env *testenv.Env
	// k8s is an uncached administrator client.
	k8s    client.WithWatch
	scheme = runtime.NewScheme()
)

const (
	testNamespace = "archgate-system"
	testImage     = "registry.example/archgate/archgate:test"
	// gateLabel opts a namespace into gating in the tests' namespace selectors. No test
	// namespace carries it: the webhook Service has no endpoints here, and a selected
	// namespace would make every pod creation wait on an unreachable webhook.
	gateLabel = "archgate.test/gate"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	log := logr.Discard()
	if os.Getenv("ARCHGATE_TEST_LOG") == "1" {
		log = zap.New(zap.UseDevMode(true))
	}
	ctrl.SetLogger(log)
	builder := runtime.NewSchemeBuilder(clientgoscheme.AddToScheme, v1beta1.AddToScheme)
	if err := builder.AddToScheme(scheme); err != nil {
		panic(err)
	}

	var err error
	env, err = testenv.Start(testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		// The operator's validating webhooks exactly as deploy/ installs them; envtest points
		// them at the local webhook server below.
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join("..", "..", "..", "..", "deploy", "base", "validating-webhook.yaml")},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping control plane:", err)
		}
	}()
	if k8s, err = client.NewWithWatch(env.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		cancel()
		return 1
	}

	if err := installOperatorRBAC(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		cancel()
		return 1
	}
	if operatorMetricsAddress, err = freeAddress(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		cancel()
		return 1
	}
	done, err := startOperator(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		cancel()
		return 1
	}
	code := m.Run()
	cancel()
	<-done
	return code
}

// testProxyEnv stands for the operator's own proxy variables (os.LookupEnv in production).
func testProxyEnv() []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy.example:3128"}, {Name: "NO_PROXY", Value: ".svc,10.0.0.0/8"}}
}

// operatorUser is the operator's ServiceAccount, as the apiserver knows it.
const operatorUser = "system:serviceaccount:" + testNamespace + ":archgate-operator"

// installOperatorRBAC applies operator/config/rbac (the ServiceAccount, the roles generated
// from the reconciler's markers, the bindings), as deploy/ does.
// failOpenGracePeriod is the operator's fail-open grace period in these tests.
const failOpenGracePeriod = 10 * time.Second

func installOperatorRBAC(ctx context.Context) error {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join("..", "..", "..", "config", "rbac"))
	if err != nil {
		return err
	}
	for _, r := range resMap.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(y, &u.Object); err != nil {
			return err
		}
		if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// operatorMetricsAddress is where the operator under test serves its metrics (HTTPS, with
// authentication and authorization); set by run.
var operatorMetricsAddress string

// startOperator runs the operator role exactly as the archgate binary does, with the
// permissions of its ServiceAccount only (so a missing RBAC rule fails the tests), except that
// the validating webhooks serve envtest's certificate on envtest's address.
func startOperator(ctx context.Context) (<-chan struct{}, error) {
	wio := env.Environment.WebhookInstallOptions
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: operatorUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	ready := make(chan struct{})
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(done)
		errc <- components.RunOperator(ctx, cfg, components.OperatorOptions{
			Common:         components.Common{Scheme: scheme, Ready: func() { close(ready) }, MetricsBindAddress: operatorMetricsAddress},
			Namespace:      testNamespace,
			Image:          testImage,
			WebhookHost:    wio.LocalServingHost,
			WebhookPort:    wio.LocalServingPort,
			WebhookCertDir: wio.LocalServingCertDir,
			ProxyEnv:       testProxyEnv(),
			// Long enough to see the webhook stay registered while a component is down, short
			// enough for the test to see it fail open.
			FailOpenGracePeriod: failOpenGracePeriod,
		})
	}()
	select {
	case <-ready:
		return done, nil
	case err := <-errc:
		return done, fmt.Errorf("operator stopped: %w", err)
	case <-time.After(60 * time.Second):
		return done, errors.New("operator not ready after 60s")
	}
}

// eventually retries check until it succeeds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consistently checks that check keeps succeeding for d.
func consistently(t *testing.T, d time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// createCluster creates the ClusterPodPlacementConfig with spec and registers its removal.
func createCluster(t *testing.T, spec v1beta1.ClusterPodPlacementConfigSpec) *v1beta1.ClusterPodPlacementConfig {
	t.Helper()
	if spec.NamespaceSelector == nil {
		spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{gateLabel: "on"}}
	}
	cppc := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}, Spec: spec}
	if err := k8s.Create(context.Background(), cppc); err != nil {
		t.Fatalf("creating ClusterPodPlacementConfig: %v", err)
	}
	t.Cleanup(func() { deleteCluster(t) })
	return cppc
}

// deleteCluster deletes the ClusterPodPlacementConfig (and any PodPlacementConfig, which would
// block it) and waits until the operator let it go.
func deleteCluster(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.DeleteAllOf(ctx, &v1beta1.PodPlacementConfig{}, client.InNamespace("team-validation")); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting PodPlacementConfigs: %v", err)
	}
	cppc := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}}
	if err := k8s.Delete(ctx, cppc); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting ClusterPodPlacementConfig: %v", err)
	}
	eventually(t, 60*time.Second, "ClusterPodPlacementConfig gone", func() error {
		err := k8s.Get(ctx, key("", v1beta1.SingletonName), &v1beta1.ClusterPodPlacementConfig{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err %v)", err)
	})
}

func getCluster(t *testing.T) *v1beta1.ClusterPodPlacementConfig {
	t.Helper()
	cppc := &v1beta1.ClusterPodPlacementConfig{}
	if err := k8s.Get(context.Background(), key("", v1beta1.SingletonName), cppc); err != nil {
		t.Fatalf("getting ClusterPodPlacementConfig: %v", err)
	}
	return cppc
}

// wantCondition waits until the ClusterPodPlacementConfig reports the condition with status
// and reason, for its current generation.
func wantCondition(t *testing.T, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	eventually(t, 30*time.Second, fmt.Sprintf("condition %s=%s (%s)", typ, status, reason), func() error {
		cppc := &v1beta1.ClusterPodPlacementConfig{}
		if err := k8s.Get(context.Background(), key("", v1beta1.SingletonName), cppc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cppc.Status.Conditions, typ)
		if c == nil {
			return errors.New("condition missing")
		}
		got = *c
		if c.Status != status || c.Reason != reason || c.ObservedGeneration != cppc.Generation || cppc.Status.ObservedGeneration != cppc.Generation {
			return fmt.Errorf("got %s %s (generation %d of %d): %s", c.Status, c.Reason, c.ObservedGeneration, cppc.Generation, c.Message)
		}
		return nil
	})
	return got
}

func getDeployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	eventually(t, 30*time.Second, "Deployment "+name+" exists", func() error {
		return k8s.Get(context.Background(), key(testNamespace, name), d)
	})
	return d
}

// setDeploymentStatus plays the Deployment controller (there is none here): available of the
// Deployment's replicas are available and every replica runs the latest template.
func setDeploymentStatus(t *testing.T, name string, available int32) {
	t.Helper()
	setDeploymentStatusIn(t, testNamespace, name, available)
}

// setDeploymentStatusIn is setDeploymentStatus for the Deployment ns/name.
func setDeploymentStatusIn(t *testing.T, ns, name string, available int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(context.Background(), key(ns, name), d); err != nil {
			return err
		}
		want := *d.Spec.Replicas
		availableStatus, reason := corev1.ConditionTrue, "MinimumReplicasAvailable"
		if available == 0 {
			availableStatus, reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
		}
		now := metav1.Now()
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration:  d.Generation,
			Replicas:            want,
			UpdatedReplicas:     want,
			ReadyReplicas:       available,
			AvailableReplicas:   available,
			UnavailableReplicas: want - available,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: availableStatus, Reason: reason, LastUpdateTime: now, LastTransitionTime: now},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now},
			},
		}
		return k8s.Status().Update(context.Background(), d)
	})
	if err != nil {
		t.Fatalf("setting status of Deployment %s: %v", name, err)
	}
}

// install creates the ClusterPodPlacementConfig and plays the Deployment controller until the
// operator reports Available.
func install(t *testing.T, spec v1beta1.ClusterPodPlacementConfigSpec) {
	t.Helper()
	createCluster(t, spec)
	getDeployment(t, operator.WebhookComponentName)
	getDeployment(t, operator.ControllerComponentName)
	setDeploymentStatus(t, operator.WebhookComponentName, operator.WebhookReplicas)
	setDeploymentStatus(t, operator.ControllerComponentName, operator.ControllerReplicas)
	wantCondition(t, v1beta1.ConditionAvailable, metav1.ConditionTrue, v1beta1.ReasonAllComponentsReady)
}

func mutatingWebhookConfiguration() (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	err := k8s.Get(context.Background(), key("", operator.DefaultMutatingWebhookConfigurationName), mwc)
	return mwc, err
}

func webhookRegistered() error {
	_, err := mutatingWebhookConfiguration()
	return err
}

func webhookNotRegistered() error {
	if _, err := mutatingWebhookConfiguration(); !apierrors.IsNotFound(err) {
		return fmt.Errorf("MutatingWebhookConfiguration present (err %v)", err)
	}
	return nil
}

// operandKinds are the kinds of every object the reconciler creates, for watching and for
// checking that they are gone.
var operandKinds = []struct {
	gvk        schema.GroupVersionKind
	namespaced bool
}{
	{corev1.SchemeGroupVersion.WithKind("ServiceAccount"), true},
	{rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), false},
	{rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), false},
	{rbacv1.SchemeGroupVersion.WithKind("Role"), true},
	{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), true},
	{corev1.SchemeGroupVersion.WithKind("Service"), true},
	{corev1.SchemeGroupVersion.WithKind("Secret"), true},
	{corev1.SchemeGroupVersion.WithKind("ConfigMap"), true},
	{policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), true},
	{appsv1.SchemeGroupVersion.WithKind("Deployment"), true},
	{admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"), false},
}

// operatorOwn are the objects labelled as managed by the operator that belong to the operator
// itself rather than to the components: its CA, the CA's public bundle, its metrics certificate.
var operatorOwn = []string{
	"Secret/" + certs.DefaultCASecretName,
	"ConfigMap/" + operator.MetricsCAConfigMapName,
	"Secret/" + operator.DefaultOperatorMetricsSecretName,
}

// managedObjects lists "Kind/name" of every object labelled as managed by the operator,
// except the operator's own (operatorOwn).
func managedObjects(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, k := range operandKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabels{operator.LabelManagedBy: operator.ManagedBy}}
		if k.namespaced {
			opts = append(opts, client.InNamespace(testNamespace))
		}
		if err := k8s.List(context.Background(), list, opts...); err != nil {
			t.Fatalf("listing %s: %v", k.gvk.Kind, err)
		}
		for _, o := range list.Items {
			if id := k.gvk.Kind + "/" + o.Name; !slices.Contains(operatorOwn, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// creations records, from watches opened before the objects exist, the resourceVersion at
// which each managed object was created. etcd3 resourceVersions are one global revision
// counter, so they order creations across kinds (a test-only assumption: clients must treat
// resourceVersions as opaque).
type creations struct {
	mu sync.Mutex
	rv map[string]uint64
}

func watchCreations(t *testing.T, ctx context.Context) *creations {
	t.Helper()
	c := &creations{rv: map[string]uint64{}}
	for _, k := range operandKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabels{operator.LabelManagedBy: operator.ManagedBy}}
		if k.namespaced {
			opts = append(opts, client.InNamespace(testNamespace))
		}
		w, err := k8s.Watch(ctx, list, opts...)
		if err != nil {
			t.Fatalf("watching %s: %v", k.gvk.Kind, err)
		}
		kind := k.gvk.Kind
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if ev.Type != watch.Added {
					continue
				}
				o, ok := ev.Object.(*metav1.PartialObjectMetadata)
				if !ok {
					continue
				}
				var rv uint64
				fmt.Sscan(o.ResourceVersion, &rv)
				c.mu.Lock()
				if _, seen := c.rv[kind+"/"+o.Name]; !seen {
					c.rv[kind+"/"+o.Name] = rv
				}
				c.mu.Unlock()
			}
		}()
	}
	return c
}

func (c *creations) get(name string) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rv, ok := c.rv[name]
	return rv, ok
}

// assertOrder checks that every object of each group was created after every object of the
// groups before it.
func (c *creations) assertOrder(t *testing.T, groups ...[]string) {
	t.Helper()
	var prevMax uint64
	var prevGroup []string
	for _, g := range groups {
		var lo, hi uint64
		for i, name := range g {
			rv, ok := c.get(name)
			if !ok {
				t.Fatalf("creation of %s not seen", name)
			}
			if i == 0 || rv < lo {
				lo = rv
			}
			if rv > hi {
				hi = rv
			}
		}
		if lo < prevMax {
			t.Errorf("%v created before all of %v had been", g, prevGroup)
		}
		prevMax, prevGroup = hi, g
	}
}

func containsArg(args []string, want string) bool { return slices.Contains(args, want) }

func argWithPrefix(args []string, prefix string) string {
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			return a
		}
	}
	return ""
}
