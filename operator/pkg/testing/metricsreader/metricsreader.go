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

// Package metricsreader is the identity that may read the components' HTTPS metrics
// endpoints, as a Prometheus gets it: the ClusterRole archgate-metrics-reader (the one
// operator/config/rbac installs), a ServiceAccount bound to it, and a token of that
// ServiceAccount from the TokenRequest API. The simulator and the tests scrape with it.
package metricsreader

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// ClusterRoleName is the ClusterRole that grants reading /metrics.
const ClusterRoleName = "archgate-metrics-reader"

// fieldManager applies the objects Grant creates.
const fieldManager = "archgate-metrics-reader"

// ClusterRole returns the ClusterRole that grants get on the non-resource URL /metrics, and
// nothing else. operator/config/rbac/metrics_reader_role.yaml is the same object (a test
// compares them).
func ClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
}

// Reader names the ServiceAccount that scrapes.
type Reader struct {
	Namespace, ServiceAccount string
}

// Grant applies (server-side) the ClusterRole, the ServiceAccount and a ClusterRoleBinding
// named after the ServiceAccount, as an administrator installs a Prometheus; cfg must be
// allowed to.
func Grant(ctx context.Context, cfg *rest.Config, r Reader) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	role := rbacv1ac.ClusterRole(ClusterRoleName)
	for _, rule := range ClusterRole().Rules {
		role.WithRules(rbacv1ac.PolicyRule().WithNonResourceURLs(rule.NonResourceURLs...).WithVerbs(rule.Verbs...))
	}
	if _, err := cs.RbacV1().ClusterRoles().Apply(ctx, role, opts); err != nil {
		return fmt.Errorf("applying ClusterRole %s: %w", ClusterRoleName, err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(r.Namespace).Apply(ctx, corev1ac.ServiceAccount(r.ServiceAccount, r.Namespace), opts); err != nil {
		return fmt.Errorf("applying ServiceAccount %s/%s: %w", r.Namespace, r.ServiceAccount, err)
	}
	binding := rbacv1ac.ClusterRoleBinding(r.bindingName()).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(ClusterRoleName)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(r.Namespace).WithName(r.ServiceAccount))
	if _, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, binding, opts); err != nil {
		return fmt.Errorf("applying ClusterRoleBinding %s: %w", r.bindingName(), err)
	}
	return nil
}

func (r Reader) bindingName() string {
	return ClusterRoleName + ":" + r.Namespace + ":" + r.ServiceAccount
}

// Token returns a bearer token of the reader's ServiceAccount valid for validity (the
// apiserver may shorten it), from the TokenRequest API, as the kubelet projects one into a
// Prometheus pod.
func Token(ctx context.Context, cfg *rest.Config, r Reader, validity time.Duration) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(validity.Seconds())),
	}}
	tr, err := cs.CoreV1().ServiceAccounts(r.Namespace).CreateToken(ctx, r.ServiceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", r.Namespace, r.ServiceAccount, err)
	}
	return tr.Status.Token, nil
}
