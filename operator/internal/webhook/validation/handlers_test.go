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

package validation

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func cluster() *v1beta1.ClusterPodPlacementConfig {
	return &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}}
}

func raw(t *testing.T, obj runtime.Object) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func ppcRequest(t *testing.T, op admissionv1.Operation, obj, old *v1beta1.PodPlacementConfig) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "uid",
		Kind:      metav1.GroupVersionKind{Group: v1beta1.GroupName, Version: "v1beta1", Kind: "PodPlacementConfig"},
		Resource:  metav1.GroupVersionResource{Group: v1beta1.GroupName, Version: "v1beta1", Resource: "podplacementconfigs"},
		Namespace: obj.Namespace,
		Name:      obj.Name,
		Operation: op,
		Object:    raw(t, obj),
	}}
	if old != nil {
		req.OldObject = raw(t, old)
	}
	return req
}

func TestPodPlacementConfigValidator(t *testing.T) {
	tests := map[string]struct {
		existing    []client.Object
		op          admissionv1.Operation
		obj, old    *v1beta1.PodPlacementConfig
		wantMessage string // "" means allowed
	}{
		"created with the cluster config": {
			existing: []client.Object{cluster(), objects.PodPlacementConfig("team", "other").WithPriority(10).Build()},
			op:       admissionv1.Create, obj: objects.PodPlacementConfig("team", "prefer-arm").WithPriority(100).WithPlatforms(objects.Platform("arm64", 10), objects.Platform("amd64", 10)).Build(),
		},
		"created without the cluster config": {
			op: admissionv1.Create, obj: objects.PodPlacementConfig("team", "prefer-arm").WithPriority(100).Build(),
			wantMessage: `PodPlacementConfig team/prefer-arm is invalid: metadata.namespace: Forbidden: no ClusterPodPlacementConfig "cluster" exists: ` +
				`a PodPlacementConfig only tunes the placement that the ClusterPodPlacementConfig enables, create that first`,
		},
		"created while the cluster config is being deleted": {
			existing: []client.Object{func() client.Object {
				c := cluster()
				now := metav1.Now()
				c.DeletionTimestamp = &now
				c.Finalizers = []string{"test"}
				return c
			}()},
			op: admissionv1.Create, obj: objects.PodPlacementConfig("team", "prefer-arm").Build(),
			wantMessage: `PodPlacementConfig team/prefer-arm is invalid: metadata.namespace: Forbidden: ClusterPodPlacementConfig "cluster" is being deleted: ` +
				`wait until it is gone and create it again first`,
		},
		"priority taken in the namespace": {
			existing: []client.Object{cluster(), objects.PodPlacementConfig("team", "other").WithPriority(100).Build(), objects.PodPlacementConfig("elsewhere", "same").WithPriority(100).Build()},
			op:       admissionv1.Create, obj: objects.PodPlacementConfig("team", "prefer-arm").WithPriority(100).Build(),
			wantMessage: `PodPlacementConfig team/prefer-arm is invalid: spec.priority: Invalid value: 100: already used by PodPlacementConfig team/other; ` +
				`each PodPlacementConfig of a namespace needs its own priority`,
		},
		"architecture repeated": {
			existing: []client.Object{cluster()},
			op:       admissionv1.Create, obj: objects.PodPlacementConfig("team", "prefer-arm").WithPlatforms(objects.Platform("arm64", 10), objects.Platform("amd64", 10), objects.Platform("arm64", 10)).Build(),
			wantMessage: `PodPlacementConfig team/prefer-arm is invalid: spec.plugins.nodeAffinityScoring.platforms[2].architecture: Invalid value: "arm64": ` +
				`already listed at spec.plugins.nodeAffinityScoring.platforms[0].architecture; give each architecture one weight`,
		},
		"every problem at once": {
			existing: []client.Object{objects.PodPlacementConfig("team", "a").WithPriority(7).Build(), objects.PodPlacementConfig("team", "b").WithPriority(7).Build()},
			op:       admissionv1.Create, obj: objects.PodPlacementConfig("team", "c").WithPriority(7).WithPlatforms(objects.Platform("s390x", 10), objects.Platform("s390x", 10)).Build(),
			wantMessage: `PodPlacementConfig team/c is invalid: [metadata.namespace: Forbidden: no ClusterPodPlacementConfig "cluster" exists: ` +
				`a PodPlacementConfig only tunes the placement that the ClusterPodPlacementConfig enables, create that first, ` +
				`spec.priority: Invalid value: 7: already used by PodPlacementConfig team/a, team/b; each PodPlacementConfig of a namespace needs its own priority, ` +
				`spec.plugins.nodeAffinityScoring.platforms[1].architecture: Invalid value: "s390x": already listed at ` +
				`spec.plugins.nodeAffinityScoring.platforms[0].architecture; give each architecture one weight]`,
		},
		"update keeping its own priority": {
			existing: []client.Object{cluster(), objects.PodPlacementConfig("team", "prefer-arm").WithPriority(5).Build()},
			op:       admissionv1.Update, obj: objects.PodPlacementConfig("team", "prefer-arm").WithPriority(5).WithPlatforms(objects.Platform("arm64", 10)).Build(), old: objects.PodPlacementConfig("team", "prefer-arm").WithPriority(5).Build(),
		},
		"update to a taken priority": {
			existing: []client.Object{cluster(), objects.PodPlacementConfig("team", "prefer-arm").WithPriority(5).Build(), objects.PodPlacementConfig("team", "other").WithPriority(6).Build()},
			op:       admissionv1.Update, obj: objects.PodPlacementConfig("team", "prefer-arm").WithPriority(6).Build(), old: objects.PodPlacementConfig("team", "prefer-arm").WithPriority(5).Build(),
			wantMessage: `PodPlacementConfig team/prefer-arm is invalid: spec.priority: Invalid value: 6: already used by PodPlacementConfig team/other; ` +
				`each PodPlacementConfig of a namespace needs its own priority`,
		},
		"update without the cluster config is allowed": {
			existing: []client.Object{objects.PodPlacementConfig("team", "prefer-arm").WithPriority(5).Build()},
			op:       admissionv1.Update, obj: objects.PodPlacementConfig("team", "prefer-arm").WithPriority(5).WithPlatforms(objects.Platform("amd64", 10)).Build(), old: objects.PodPlacementConfig("team", "prefer-arm").WithPriority(5).Build(),
		},
		"delete is not checked": {
			op: admissionv1.Delete, obj: objects.PodPlacementConfig("team", "prefer-arm").Build(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := scheme(t)
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.existing...).Build()
			resp := NewPodPlacementConfigValidator(c, s).Handle(context.Background(), ppcRequest(t, tc.op, tc.obj, tc.old))
			assertResponse(t, resp, tc.wantMessage, http.StatusUnprocessableEntity)
		})
	}
}

func TestClusterPodPlacementConfigValidator(t *testing.T) {
	var many []client.Object
	for i := range 7 {
		many = append(many, objects.PodPlacementConfig(fmt.Sprintf("ns-%d", i), "cfg").WithPriority(int32(i)).Build())
	}
	tests := map[string]struct {
		existing    []client.Object
		op          admissionv1.Operation
		wantMessage string
	}{
		"delete without dependents": {op: admissionv1.Delete},
		"delete with dependents": {
			existing: []client.Object{objects.PodPlacementConfig("team", "prefer-arm").Build(), objects.PodPlacementConfig("other", "x").Build()},
			op:       admissionv1.Delete,
			wantMessage: `ClusterPodPlacementConfig "cluster" cannot be deleted: 2 PodPlacementConfig(s) still depend on it (other/x, team/prefer-arm): ` +
				`delete them first (kubectl delete podplacementconfigs --all-namespaces --all)`,
		},
		"delete with many dependents": {
			existing: many,
			op:       admissionv1.Delete,
			wantMessage: `ClusterPodPlacementConfig "cluster" cannot be deleted: 7 PodPlacementConfig(s) still depend on it ` +
				`(ns-0/cfg, ns-1/cfg, ns-2/cfg, ns-3/cfg, ns-4/cfg and 2 more): delete them first (kubectl delete podplacementconfigs --all-namespaces --all)`,
		},
		"update with dependents is not a deletion": {existing: []client.Object{objects.PodPlacementConfig("team", "prefer-arm").Build()}, op: admissionv1.Update},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := scheme(t)
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.existing...).Build()
			resp := NewClusterPodPlacementConfigValidator(c, s, v1beta1.PlatformKubernetes).Handle(context.Background(), clusterRequest(t, tc.op, cluster()))
			assertResponse(t, resp, tc.wantMessage, http.StatusConflict)
		})
	}
}

// clusterRequest is an admission request for operation on the ClusterPodPlacementConfig obj.
func clusterRequest(t *testing.T, op admissionv1.Operation, obj *v1beta1.ClusterPodPlacementConfig) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "uid",
		Kind:      metav1.GroupVersionKind{Group: v1beta1.GroupName, Version: "v1beta1", Kind: "ClusterPodPlacementConfig"},
		Name:      v1beta1.SingletonName,
		Operation: op,
		Object:    raw(t, obj),
		OldObject: raw(t, cluster()),
	}}
}

// TestClusterPodPlacementConfigPlatformRules checks seed 004's platform rule through the
// admission handler: globalPullSecretRef is refused on OpenShift, on create and update, with
// an actionable message, and accepted on other Kubernetes clusters.
func TestClusterPodPlacementConfigPlatformRules(t *testing.T) {
	withRef := cluster()
	withRef.Spec.GlobalPullSecretRef = &v1beta1.NamespacedObjectReference{Namespace: "creds", Name: "regcred"}
	withCA := cluster()
	withCA.Spec.CABundleConfigmapRef = &v1beta1.NamespacedObjectReference{Name: "trusted-ca"}
	const refused = `ClusterPodPlacementConfig cluster is invalid: spec.globalPullSecretRef: Forbidden: on OpenShift archgate always uses ` +
		`the cluster's global pull secret openshift-config/pull-secret (add registry credentials there); remove spec.globalPullSecretRef`
	for name, tc := range map[string]struct {
		platform    v1beta1.Platform
		op          admissionv1.Operation
		obj         *v1beta1.ClusterPodPlacementConfig
		wantMessage string
	}{
		"kubernetes create with a reference":   {v1beta1.PlatformKubernetes, admissionv1.Create, withRef, ""},
		"openshift create without a reference": {v1beta1.PlatformOpenShift, admissionv1.Create, withCA, ""},
		"openshift create with a reference":    {v1beta1.PlatformOpenShift, admissionv1.Create, withRef, refused},
		"openshift update with a reference":    {v1beta1.PlatformOpenShift, admissionv1.Update, withRef, refused},
	} {
		t.Run(name, func(t *testing.T) {
			s := scheme(t)
			c := fake.NewClientBuilder().WithScheme(s).Build()
			resp := NewClusterPodPlacementConfigValidator(c, s, tc.platform).Handle(context.Background(), clusterRequest(t, tc.op, tc.obj))
			assertResponse(t, resp, tc.wantMessage, http.StatusUnprocessableEntity)
		})
	}
}

func assertResponse(t *testing.T, resp admission.Response, wantMessage string, wantCode int32) {
	t.Helper()
	if wantMessage == "" {
		if !resp.Allowed {
			t.Fatalf("refused: %v", resp.Result)
		}
		return
	}
	if resp.Allowed {
		t.Fatalf("allowed, want refused with %q", wantMessage)
	}
	if resp.Result.Message != wantMessage {
		t.Errorf("message\n got: %s\nwant: %s", resp.Result.Message, wantMessage)
	}
	if resp.Result.Code != wantCode {
		t.Errorf("code %d, want %d", resp.Result.Code, wantCode)
	}
}

// TestClusterPodPlacementConfigPlacementRules: the validating webhook compiles every placement
// rule as the components evaluate it and refuses, naming the field and quoting CEL, an
// expression that does not compile or does not return a bool, on create and on update; valid
// rules, and rules the object already had, pass.
func TestClusterPodPlacementConfigPlacementRules(t *testing.T) {
	withRules := func(expressions ...string) *v1beta1.ClusterPodPlacementConfig {
		c := cluster()
		for i, e := range expressions {
			c.Spec.PlacementRules = append(c.Spec.PlacementRules,
				v1beta1.PlacementRule{Name: fmt.Sprintf("rule-%d", i), Expression: e, RequiredArchitectures: []string{"amd64"}})
		}
		return c
	}
	const (
		valid   = "object.metadata.?labels.?team.orValue('') == 'ml'"
		syntax  = "object.metadata.labels.team =="
		notBool = "object.metadata.labels.team"
		// includes() came with the CEL of Kubernetes 1.37; these libraries' compatibility
		// version is 1.36: only the stored-expressions environment knows it.
		newer     = "object.spec.containers.map(c, c.name).includes('app')"
		refusedAt = `ClusterPodPlacementConfig cluster is invalid: spec.placementRules[1].expression: Invalid value: `
	)
	for name, tc := range map[string]struct {
		op       admissionv1.Operation
		obj, old *v1beta1.ClusterPodPlacementConfig
		// wantPrefix and wantContains describe the refusal; both empty: allowed.
		wantPrefix, wantContains string
	}{
		"create with valid rules": {op: admissionv1.Create, obj: withRules(valid, "true")},
		"create with a syntax error": {op: admissionv1.Create, obj: withRules(valid, syntax),
			wantPrefix: refusedAt + fmt.Sprintf("%q: ", syntax), wantContains: "Syntax error"},
		"update to an expression that is not a bool": {op: admissionv1.Update, obj: withRules(valid, notBool), old: withRules(valid),
			wantPrefix: refusedAt + fmt.Sprintf("%q: ", notBool), wantContains: "must evaluate to bool but got dyn"},
		"update keeping valid rules": {op: admissionv1.Update, obj: withRules(valid, "true"), old: withRules(valid, "true")},
		"create with a function newer than the compatibility version": {op: admissionv1.Create, obj: withRules(valid, newer),
			wantPrefix: refusedAt + fmt.Sprintf("%q: ", newer), wantContains: "undeclared reference to 'includes'"},
		"update keeping an expression the object already had, which only stored expressions may use": {op: admissionv1.Update,
			obj: withRules(valid, newer), old: withRules("true", newer)},
	} {
		t.Run(name, func(t *testing.T) {
			s := scheme(t)
			c := fake.NewClientBuilder().WithScheme(s).Build()
			old := tc.old
			if old == nil {
				old = cluster()
			}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID:       "uid",
				Kind:      metav1.GroupVersionKind{Group: v1beta1.GroupName, Version: "v1beta1", Kind: "ClusterPodPlacementConfig"},
				Name:      v1beta1.SingletonName,
				Operation: tc.op,
				Object:    raw(t, tc.obj),
				OldObject: raw(t, old),
			}}
			resp := NewClusterPodPlacementConfigValidator(c, s, v1beta1.PlatformKubernetes).Handle(context.Background(), req)
			if tc.wantPrefix == "" {
				if !resp.Allowed {
					t.Fatalf("refused: %v", resp.Result)
				}
				return
			}
			if resp.Allowed {
				t.Fatalf("allowed, want refused with %q…", tc.wantPrefix)
			}
			if msg := resp.Result.Message; !strings.HasPrefix(msg, tc.wantPrefix) || !strings.Contains(msg, tc.wantContains) {
				t.Errorf("message\n got: %s\nwant: %s…%s…", msg, tc.wantPrefix, tc.wantContains)
			}
			if resp.Result.Code != http.StatusUnprocessableEntity {
				t.Errorf("code %d, want %d", resp.Result.Code, http.StatusUnprocessableEntity)
			}
			if causes := resp.Result.Details.Causes; len(causes) != 1 || causes[0].Field != "spec.placementRules[1].expression" {
				t.Errorf("causes %+v, want one for spec.placementRules[1].expression", causes)
			}
		})
	}
}
