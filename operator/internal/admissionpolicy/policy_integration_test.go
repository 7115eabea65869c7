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

package admissionpolicy_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/admissionpolicy"
	"github.com/archgate/archgate/operator/internal/knownimages"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"
)

// Set up by TestMain: k8s (and restConfig) talk to the package's control plane as an administrator;
// servingCertDir and servingCA are envtest's webhook serving certificate (for 127.0.0.1) and its
// CA, for the webhooks the tests register.
var (
	k8s            client.Client
	restConfig     *rest.Config
	servingCertDir string
	servingCA      []byte
)

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}}, func(env *testenv.Env) error {
		var err error
		k8s, err = testenv.Client(env.Config, clientgoscheme.AddToScheme, v1beta1.AddToScheme)
		restConfig = env.Config
		servingCertDir = env.Environment.WebhookInstallOptions.LocalServingCertDir
		servingCA = env.Environment.WebhookInstallOptions.LocalServingCAData
		return err
	}))
}

// installPolicy applies the policy and binding rendered for cluster, with params, and waits
// until the apiserver enforces them: probe, admitted, satisfies ready.
func installPolicy(t testing.TB, cluster *v1beta1.ClusterPodPlacementConfig, data map[string]string, probe *corev1.Pod, ready func(*corev1.Pod) bool) {
	t.Helper()
	// Fail, not the rendered Ignore: an expression that fails at run time must fail the test
	// with the apiserver's message, not let the pod through unchanged.
	installPolicyFailing(t, cluster, data, probe, ready, admissionregistrationv1.Fail)
}

// installPolicyFailing is installPolicy with the policy's failurePolicy.
func installPolicyFailing(t testing.TB, cluster *v1beta1.ClusterPodPlacementConfig, data map[string]string, probe *corev1.Pod,
	ready func(*corev1.Pod) bool, failurePolicy admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	ctx := t.Context()
	ensureNamespace(t, operatorNamespace)
	opts := admissionpolicy.Options{Name: "archgate-placement", OperatorNamespace: operatorNamespace, Cluster: cluster}
	params := paramsConfigMap(data)
	policy := admissionpolicy.Policy(opts)
	policy.Spec.FailurePolicy = ptr.To(failurePolicy)
	for _, obj := range []client.Object{params, policy, admissionpolicy.Binding(opts)} {
		obj.SetManagedFields(nil)
		obj.SetResourceVersion("")
		if err := k8s.Patch(ctx, obj, client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %T: %v", obj, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pod := probe.DeepCopy()
		if err := k8s.Create(ctx, pod, client.DryRunAll); err != nil {
			return false, err
		}
		return ready(pod), nil
	})
	if err != nil {
		t.Fatalf("the policy never took effect: %v", err)
	}
}

// operatorNamespace holds the params ConfigMap.
const operatorNamespace = "archgate-system"

// paramsConfigMap is the params ConfigMap with data, as the controller publishes it.
func paramsConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: knownimages.DefaultParametersConfigMapName},
		Data:       data,
	}
}

func ensureNamespace(t testing.TB, name string) { ensureNamespaceWith(t, name, nil) }

// ensureNamespaceWith creates the namespace name with labels, unless it exists.
func ensureNamespaceWith(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := k8s.Create(t.Context(), ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

// admit creates pod with a dry run and returns it as admitted.
func admit(t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	out := pod.DeepCopy()
	if err := k8s.Create(t.Context(), out, client.DryRunAll); err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return out
}

// TestPolicyLeavesJudgementToOthers: the pods of a namespace with PodPlacementConfigs are gated
// for the controller, and without its params the policy changes no pod, which the webhook then
// handles; no pod is ever refused.
func TestPolicyLeavesJudgementToOthers(t *testing.T) {
	ctx := t.Context()
	for _, ns := range []string{"plain", "configured"} {
		ensureNamespace(t, ns)
	}
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	}
	cluster := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	params := map[string]string{knownimages.ParameterKey("nginx"): "amd64,arm64", knownimages.NamespaceKey("configured"): "1"}
	installPolicy(t, cluster, params, pod("plain"), func(p *corev1.Pod) bool {
		return p.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission
	})
	got := admit(t, pod("configured"))
	if got.Labels[v1beta1.LabelSchedulingGate] != v1beta1.LabelValueGated || !v1beta1.HasSchedulingGate(&got.Spec) {
		t.Errorf("pod of a namespace with PodPlacementConfigs: labels %v, gates %v; want it gated", got.Labels, got.Spec.SchedulingGates)
	}

	if err := k8s.Delete(ctx, paramsConfigMap(nil)); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		p := admit(t, pod("plain"))
		_, labelled := p.Labels[v1beta1.LabelSchedulingGate]
		return !labelled && len(p.Spec.SchedulingGates) == 0 && p.Spec.Affinity == nil, nil
	})
	if err != nil {
		t.Fatalf("without its params the policy still changes pods: %v", err)
	}
}

// TestPolicyLeavesRuleMatchesToTheWebhook: with placement rules, the policy leaves to the
// webhook, unlabelled and ungated, every pod a rule matches and every pod for which a rule
// fails (under the rendered failurePolicy Ignore, the apiserver skips a policy whose match
// condition errs): the webhook evaluates the rules as the controller does, and gates the pods
// it cannot place for the controller to report. Other pods are placed as before.
func TestPolicyLeavesRuleMatchesToTheWebhook(t *testing.T) {
	ensureNamespace(t, "rules")
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "rules", Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	}
	// A weight of its own tells this test's policy from an earlier test's.
	cluster := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "s390x", Weight: 7}},
		}}, PlacementRules: []v1beta1.PlacementRule{
			// Fails for a pod without labels; ends with a comment, as users write them.
			{Name: "ml", Expression: "object.metadata.labels.team == 'ml' // the ML team", RequiredArchitectures: []string{"arm64"}},
			{Name: "batch", Expression: "object.metadata.?labels.?kind.orValue('') == 'batch'", RequiredArchitectures: []string{"amd64"}},
		}}}
	params := map[string]string{knownimages.ParameterKey("nginx"): "amd64,arm64,s390x"}
	// The probe: no rule matches, none fails; placed by this policy once it is in effect.
	installPolicyFailing(t, cluster, params, pod("probe", map[string]string{"team": "web"}), func(p *corev1.Pod) bool {
		na := p.Spec.Affinity
		return p.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission && na != nil && na.NodeAffinity != nil &&
			len(na.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 1 &&
			na.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight == 7
	}, admissionregistrationv1.Ignore)
	for name, tc := range map[string]struct {
		labels     map[string]string
		wantPlaced bool
	}{
		"a pod no rule matches is placed by the policy": {labels: map[string]string{"team": "web"}, wantPlaced: true},
		"a pod a rule matches is left to the webhook":   {labels: map[string]string{"team": "ml"}},
		"a pod the second rule matches, too":            {labels: map[string]string{"team": "web", "kind": "batch"}},
		"a pod a rule fails for is left to the webhook": {},
	} {
		t.Run(name, func(t *testing.T) {
			got := admit(t, pod("p", tc.labels))
			label, labelled := got.Labels[v1beta1.LabelSchedulingGate]
			switch {
			case tc.wantPlaced && label != v1beta1.LabelValueAdmission:
				t.Errorf("labels %v, want placed by the policy", got.Labels)
			case !tc.wantPlaced && (labelled || len(got.Spec.SchedulingGates) > 0 || got.Spec.Affinity != nil):
				t.Errorf("labels %v, gates %v, affinity %v; want the pod left alone for the webhook", got.Labels, got.Spec.SchedulingGates, got.Spec.Affinity)
			}
		})
	}
}
