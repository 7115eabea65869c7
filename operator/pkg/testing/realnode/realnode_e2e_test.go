//go:build e2e

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

package realnode

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/pkg/testing/testenv"
)

// TestRealNode starts the cluster (or reuses a running one), runs archgate's own image on the
// real node as a non-root pod that reads a pod through the kubernetes Service with its
// ServiceAccount token, and stops the cluster. Run it with `make test-realnode`, which builds
// bin/image.tar and the components first.
func TestRealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	root, err := testenv.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{RepoRoot: root}
	start := time.Now()
	c, err := Up(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up, node Ready: %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Down(context.Background()); err != nil {
			t.Errorf("Down: %v", err)
		}
		if _, err := Attach(context.Background(), opts); err == nil {
			t.Error("Attach after Down found a running cluster")
		}
	})
	if err := c.ImportImage(ctx, filepath.Join(c.opts.RepoRoot, "bin", "image.tar"), "localhost/archgate/archgate"); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.Config)
	createFixtures(ctx, t, cs)
	podStart := time.Now()
	pod := waitPodDone(ctx, t, cs, "explain")
	t.Logf("explain pod %s after %s", pod.Status.Phase, time.Since(podStart).Round(time.Millisecond))
	logs, err := cs.CoreV1().Pods("default").GetLogs("explain", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	if pod.Status.Phase != corev1.PodSucceeded || !strings.Contains(string(logs), "Pod default/sleeper") {
		t.Errorf("archgate explain in the cluster: phase %s, logs:\n%s", pod.Status.Phase, logs)
	}
}

// createFixtures creates a pod to explain, view rights for the default ServiceAccount and the
// pod running `archgate explain` on it from the image `make image` built.
func createFixtures(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	never := corev1.PullNever
	_, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "localhost/archgate/pause:1", ImagePullPolicy: never}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "realnode-test-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "default"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "explain"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "archgate", Image: "localhost/archgate/archgate:latest", ImagePullPolicy: never,
				Args: []string{"explain", "default/sleeper", "--no-inspect"},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false)},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// waitPodDone polls the pod until it succeeded or failed, within the test's context.
func waitPodDone(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	for {
		pod, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
			return pod
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s not done: last error %v, pod %+v", name, err, pod)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
