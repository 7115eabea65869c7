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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// TestControllerPodWritesFence applies deploy/'s ValidatingAdmissionPolicy and proves, with
// requests refused by the apiserver, that archgate-controller's ServiceAccount can make a
// pod's placement writes and nothing else: not an image, a toleration, a gate added, or a
// label or annotation of someone else's. Another user's same writes are not fenced.
func TestControllerPodWritesFence(t *testing.T) {
	ctx := t.Context()
	applyPolicies(t)
	const ns = "fence-test"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	controller := impersonating(t, "system:serviceaccount:archgate-system:archgate-controller")
	other := impersonating(t, "system:serviceaccount:team:deployer")
	// The tolerations fence reads the architecture taints of the ClusterPodPlacementConfig.
	createCluster(t, v1beta1.ClusterPodPlacementConfigSpec{ArchitectureTaints: []v1beta1.ArchitectureTaint{{Architecture: "arm64"}}})
	waitFenceActive(t, ns, controller)
	archToleration := corev1.Toleration{Key: corev1.LabelArchStable, Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectNoSchedule}

	tests := map[string]struct {
		client  client.Client
		mutate  func(*corev1.Pod)
		wantErr string // "": allowed
	}{
		"the placement write: gate removed, affinity, archgate's labels and annotations": {
			client: controller,
			mutate: func(p *corev1.Pod) {
				p.Spec.SchedulingGates = nil
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}}}}}}
				p.Labels[v1beta1.LabelSchedulingGate] = v1beta1.LabelValueRemoved
				p.Labels[v1beta1.LabelPlacement] = "arch-set"
				p.Annotations = map[string]string{v1beta1.AnnotationArchitectures: "arm64"}
			},
		},
		"an image": {
			client: controller, mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "attacker.example/app:1" },
			wantErr: "may not change a container's image",
		},
		"a toleration": {
			client: controller, mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
			},
			wantErr: "may only add the tolerations of the ClusterPodPlacementConfig's architectureTaints",
		},
		"the toleration of an architecture taint, after the pod's own": {
			client: controller, mutate: func(p *corev1.Pod) {
				p.Spec.SchedulingGates = nil
				p.Spec.Tolerations = append(p.Spec.Tolerations, archToleration)
			},
		},
		"the toleration of an architecture taint, with tolerationSeconds": {
			client: controller, mutate: func(p *corev1.Pod) {
				t := archToleration
				t.Effect, t.TolerationSeconds = corev1.TaintEffectNoExecute, ptr.To[int64](5)
				p.Spec.Tolerations = append(p.Spec.Tolerations, t)
			},
			wantErr: "may only add the tolerations",
		},
		"the pod's own toleration changed (the API allows a longer tolerationSeconds)": {
			client: controller, mutate: func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](3600) },
			wantErr: "may only add the tolerations",
		},
		"a nodeSelector": {
			client: controller, mutate: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} },
			wantErr: "may not change a pod's nodeSelector",
		},
		"a user's label": {
			client: controller, mutate: func(p *corev1.Pod) { p.Labels["app"] = "other" },
			wantErr: "only the multiarch.openshift.io/ labels",
		},
		"a user's label removed": {
			client: controller, mutate: func(p *corev1.Pod) { delete(p.Labels, "app") },
			wantErr: "only the multiarch.openshift.io/ labels",
		},
		"a user's annotation": {
			client: controller, mutate: func(p *corev1.Pod) { p.Annotations = map[string]string{"team.example/owner": "x"} },
			wantErr: "only the multiarch.openshift.io/ annotations",
		},
		"another user may change an image": {
			client: other, mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example/app:2" },
		},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			i++
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: ns,
					Labels: map[string]string{"app": "web", v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}},
				Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: v1beta1.SchedulingGateName}},
					Containers:  []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
					Tolerations: []corev1.Toleration{{Key: "evict", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)}}},
			}
			if err := k8s.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k8s.Delete(ctx, pod) })
			updated := pod.DeepCopy()
			tc.mutate(updated)
			err := tc.client.Patch(ctx, updated, client.MergeFrom(pod))
			checkRefusal(t, err, tc.wantErr)
		})
	}
}

// checkRefusal checks a request's outcome: allowed when wantErr is empty, else refused with an
// error that contains wantErr.
func checkRefusal(t *testing.T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("refused: %v", err)
	case wantErr != "" && err == nil:
		t.Errorf("allowed, want refused with %q", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Errorf("refused with %v, want %q", err, wantErr)
	}
}

// waitFenceActive waits until the apiserver enforces the policy (it compiles a new policy in
// the background): the controller's image changes on a pod of its own are refused.
func waitFenceActive(t *testing.T, ns string, controller client.Client) {
	t.Helper()
	ctx := t.Context()
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:0"}}}}
	if err := k8s.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, probe) })
	n := 0
	eventually(t, 30*time.Second, "the policy enforced", func() error {
		current := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(probe), current); err != nil {
			return err
		}
		n++
		updated := current.DeepCopy()
		updated.Spec.Containers[0].Image = fmt.Sprintf("registry.example/app:%d", n) // a change every time
		if err := controller.Patch(ctx, updated, client.MergeFrom(current)); err == nil {
			return errors.New("an image change was allowed")
		} else if !apierrors.IsInvalid(err) && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return err
		}
		// The tolerations fence, a policy of its own, may be enforced later.
		updated = current.DeepCopy()
		updated.Spec.Tolerations = append(updated.Spec.Tolerations, corev1.Toleration{Key: fmt.Sprintf("probe-%d", n), Operator: corev1.TolerationOpExists})
		if err := controller.Patch(ctx, updated, client.MergeFrom(current)); err == nil {
			return errors.New("a toleration was added")
		} else if !strings.Contains(err.Error(), "archgate-controller-pod-tolerations") {
			return err
		}
		return nil
	})
}

// impersonating is an administrator client that acts as user: authorized for everything, so
// that only admission can refuse it.
func impersonating(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// policyObjects reads deploy/base/admission-policies.yaml.
func policyObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "deploy", "base", "admission-policies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	if len(out) != 6 {
		t.Fatalf("found %d objects, want three policies and their bindings", len(out))
	}
	return out
}

// applyPolicies creates deploy/'s admission policies for the test.
func applyPolicies(t *testing.T) {
	t.Helper()
	for _, obj := range policyObjects(t) {
		if err := k8s.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		// Not t.Context(): it is canceled before the cleanups run.
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	}
}

// TestOperatorDeploymentWritesFence applies deploy/'s admission policies and proves, with
// dry-run requests refused by the apiserver, that archgate-operator's ServiceAccount can
// write the Deployments archgate needs and no other: archgate's image under the component's
// ServiceAccount, local components only outside the reserved namespaces and without host
// access. Another user's same writes are not fenced.
func TestOperatorDeploymentWritesFence(t *testing.T) {
	ctx := t.Context()
	applyPolicies(t)
	const image, override = "registry.example/archgate:v1", "mirror.example/archgate@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	self := fenceDeployment(testNamespace, "archgate-operator", "archgate-operator", image)
	self.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "ARCHGATE_IMAGE", Value: override}}
	if err := k8s.Create(ctx, self); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), self) })
	for _, ns := range []string{"fence-team", "kube-fence"} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	operator := impersonating(t, "system:serviceaccount:"+testNamespace+":archgate-operator")
	other := impersonating(t, "system:serviceaccount:team:deployer")
	eventually(t, 30*time.Second, "the policy enforced", func() error {
		err := operator.Create(ctx, fenceDeployment("fence-team", "archgate-local-controller", "archgate-local-controller", "attacker.example/x:1"), client.DryRunAll)
		if err == nil {
			return errors.New("a foreign image was allowed")
		}
		return nil
	})

	hostPath := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	}
	tests := map[string]struct {
		client              client.Client
		ns, name, sa, image string
		mutate              func(*appsv1.Deployment)
		wantErr             string // "": allowed
	}{
		"a local controller":                    {client: operator, ns: "fence-team", name: "archgate-local-controller", sa: "archgate-local-controller", image: image},
		"a local webhook on the ARCHGATE_IMAGE": {client: operator, ns: "fence-team", name: "archgate-local-webhook", sa: "archgate-local-webhook", image: override},
		"the cluster controller with the credential providers' host path": {
			client: operator, ns: testNamespace, name: "archgate-controller", sa: "archgate-controller", image: image, mutate: hostPath,
		},
		"another image": {
			client: operator, ns: "fence-team", name: "archgate-local-controller", sa: "archgate-local-controller", image: "attacker.example/x:1",
			wantErr: "may deploy only its own image",
		},
		"another image in an init container": {
			client: operator, ns: "fence-team", name: "archgate-local-controller", sa: "archgate-local-controller", image: image,
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "attacker.example/x:1"}}
			},
			wantErr: "may deploy only its own image",
		},
		"another ServiceAccount": {
			client: operator, ns: "fence-team", name: "archgate-local-controller", sa: "default", image: image,
			wantErr: "ServiceAccount of the component's name",
		},
		"a local component in a reserved namespace": {
			client: operator, ns: "kube-fence", name: "archgate-local-controller", sa: "archgate-local-controller", image: image,
			wantErr: "reserved namespace",
		},
		"a local component with a host path": {
			client: operator, ns: "fence-team", name: "archgate-local-controller", sa: "archgate-local-controller", image: image, mutate: hostPath,
			wantErr: "host namespaces, host paths or privileges",
		},
		"a local component on the host network": {
			client: operator, ns: "fence-team", name: "archgate-local-webhook", sa: "archgate-local-webhook", image: image,
			mutate:  func(d *appsv1.Deployment) { d.Spec.Template.Spec.HostNetwork = true },
			wantErr: "host namespaces, host paths or privileges",
		},
		"another user may deploy anything": {client: other, ns: "fence-team", name: "archgate-local-controller", sa: "default", image: "attacker.example/x:1", mutate: hostPath},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := fenceDeployment(tc.ns, tc.name, tc.sa, tc.image)
			if tc.mutate != nil {
				tc.mutate(d)
			}
			err := tc.client.Create(ctx, d, client.DryRunAll)
			checkRefusal(t, err, tc.wantErr)
		})
	}
}

// fenceDeployment is a one-container Deployment ns/name running image as sa.
func fenceDeployment(ns, name, sa, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "c", Image: image}}},
			},
		},
	}
}
