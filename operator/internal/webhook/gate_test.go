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

package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/inspect"
)

const operatorNamespace = "archgate-system"

// podRequest returns a pod CREATE request for raw, in raw's namespace.
func podRequest(t *testing.T, raw string) admission.Request {
	t.Helper()
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(raw), &meta); err != nil {
		t.Fatalf("test pod is not JSON: %v", err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "uid-1",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: meta.Metadata.Namespace,
		Name:      meta.Metadata.Name,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: []byte(raw)},
	}}
}

func TestSchedulingGateHandle(t *testing.T) {
	gateOp := jsonpatch.NewOperation("add", "/spec/schedulingGates", []corev1.PodSchedulingGate{{Name: v1beta1.SchedulingGateName}})
	appendGateOp := jsonpatch.NewOperation("add", "/spec/schedulingGates/-", corev1.PodSchedulingGate{Name: v1beta1.SchedulingGateName})
	labelsOp := jsonpatch.NewOperation("add", "/metadata/labels", map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated})
	labelOp := jsonpatch.NewOperation("add", "/metadata/labels/multiarch.openshift.io~1scheduling-gate", v1beta1.LabelValueGated)

	tests := map[string]struct {
		pod         string
		mutate      func(*admission.Request) // changes the request built from pod
		wantPatches []jsonpatch.JsonPatchOperation
		wantSkip    SkipReason
		wantErr     bool // the pod could not be evaluated (and is still admitted unchanged)
	}{
		"pod without labels or gates": {
			pod:         `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{labelsOp, gateOp},
		},
		"pod with labels": {
			pod:         `{"metadata":{"name":"p","namespace":"team","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{labelOp, gateOp},
		},
		"pod with an empty labels map": {
			pod:         `{"metadata":{"name":"p","namespace":"team","labels":{}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{labelOp, gateOp},
		},
		"pod with null labels and an empty gate list": {
			pod:         `{"metadata":{"name":"p","namespace":"team","labels":null},"spec":{"schedulingGates":[],"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{labelsOp, gateOp},
		},
		"pod with another gate": {
			pod:         `{"metadata":{"name":"p","namespace":"team","labels":{"app":"web"}},"spec":{"schedulingGates":[{"name":"example.com/other"}],"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{labelOp, appendGateOp},
		},
		"pod already labelled gated but without the gate": {
			pod:         `{"metadata":{"name":"p","namespace":"team","labels":{"multiarch.openshift.io/scheduling-gate":"gated"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{gateOp},
		},
		"pod labelled removed (copied from an old pod)": {
			pod:         `{"metadata":{"name":"p","namespace":"team","labels":{"multiarch.openshift.io/scheduling-gate":"removed"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{labelOp, gateOp},
		},
		"nodeSelector without the arch key": {
			pod:         `{"metadata":{"name":"p","namespace":"team"},"spec":{"nodeSelector":{"disk":"ssd"},"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{labelsOp, gateOp},
		},
		"required affinity pinning the arch is still gated": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
				{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64","arm64"]}]}]}}},
				"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{labelsOp, gateOp},
		},
		"namespace only in the request": {
			pod: `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			mutate: func(r *admission.Request) {
				r.Namespace = "team"
			},
			wantPatches: []jsonpatch.JsonPatchOperation{labelsOp, gateOp},
		},
		"kube-system": {
			pod:      `{"metadata":{"name":"p","namespace":"kube-system"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip: SkipReservedNamespace,
		},
		"openshift-*": {
			pod:      `{"metadata":{"name":"p","namespace":"openshift-monitoring"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip: SkipReservedNamespace,
		},
		"hypershift-*": {
			pod:      `{"metadata":{"name":"p","namespace":"hypershift-x"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip: SkipReservedNamespace,
		},
		"operator namespace": {
			pod:      `{"metadata":{"name":"p","namespace":"archgate-system"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip: SkipOperatorNamespace,
		},
		"nodeName set": {
			pod:      `{"metadata":{"name":"p","namespace":"team"},"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip: SkipNodeNameSet,
		},
		"DaemonSet pod": {
			pod: `{"metadata":{"name":"p","namespace":"team","ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"ds","uid":"u","controller":true}]},
				"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip: SkipDaemonSet,
		},
		"ReplicaSet pod is gated": {
			pod: `{"metadata":{"name":"p","namespace":"team","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u","controller":true}]},
				"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantPatches: []jsonpatch.JsonPatchOperation{labelsOp, gateOp},
		},
		"already gated and labelled": {
			pod: `{"metadata":{"name":"p","namespace":"team","labels":{"multiarch.openshift.io/scheduling-gate":"gated"}},
				"spec":{"schedulingGates":[{"name":"example.com/other"},{"name":"multiarch.openshift.io/scheduling-gate"}],"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip: SkipAlreadyGated,
		},
		// A copy of a gated pod (kubectl debug --copy-to) that lost the label: labelled, or the
		// controller would never see it.
		"already gated without the label": {
			pod: `{"metadata":{"name":"p","namespace":"team"},"spec":{"schedulingGates":[{"name":"example.com/other"},{"name":"multiarch.openshift.io/scheduling-gate"}],
				"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip:    SkipAlreadyGated,
			wantPatches: []jsonpatch.JsonPatchOperation{labelsOp},
		},
		"already gated, labelled removed": {
			pod: `{"metadata":{"name":"p","namespace":"team","labels":{"multiarch.openshift.io/scheduling-gate":"removed"}},
				"spec":{"schedulingGates":[{"name":"multiarch.openshift.io/scheduling-gate"}],"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip:    SkipAlreadyGated,
			wantPatches: []jsonpatch.JsonPatchOperation{labelOp},
		},
		// The admission policy placed it (or it copies a placed pod): its affinity holds the
		// placement already.
		"placed at admission": {
			pod: `{"metadata":{"name":"p","namespace":"team","labels":{"multiarch.openshift.io/scheduling-gate":"admission"}},
				"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip: SkipPlacedAtAdmission,
		},
		"nodeSelector pins the arch": {
			pod:      `{"metadata":{"name":"p","namespace":"team"},"spec":{"nodeSelector":{"kubernetes.io/arch":"arm64"},"containers":[{"name":"c","image":"nginx"}]}}`,
			wantSkip: SkipNodeSelectorArch,
		},
		"update": {
			pod:      `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			mutate:   func(r *admission.Request) { r.Operation = admissionv1.Update },
			wantSkip: SkipNotPodCreate,
		},
		"not a pod": {
			pod: `{"metadata":{"name":"p","namespace":"team"}}`,
			mutate: func(r *admission.Request) {
				r.Kind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
			},
			wantSkip: SkipNotPodCreate,
		},
		"subresource": {
			pod:      `{"metadata":{"name":"p","namespace":"team"}}`,
			mutate:   func(r *admission.Request) { r.SubResource = "binding" },
			wantSkip: SkipNotPodCreate,
		},
		"undecodable pod": {
			pod:      `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":"oops"}}`,
			wantSkip: SkipUndecodable,
			wantErr:  true,
		},
		"empty object": {
			pod:      `{"metadata":{"name":"p","namespace":"team"}}`,
			mutate:   func(r *admission.Request) { r.Object.Raw = nil },
			wantSkip: SkipUndecodable,
			wantErr:  true,
		},
		"object that is not JSON": {
			pod:      `{"metadata":{"name":"p","namespace":"team"}}`,
			mutate:   func(r *admission.Request) { r.Object.Raw = []byte("\x00\xff not json") },
			wantSkip: SkipUndecodable,
			wantErr:  true,
		},
		"object of another kind under a Pod request": {
			pod: `{"metadata":{"name":"p","namespace":"team"}}`,
			mutate: func(r *admission.Request) {
				r.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Pod","spec":{"nodeName":7}}`)
			},
			wantSkip: SkipUndecodable,
			wantErr:  true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := podRequest(t, tc.pod)
			if tc.mutate != nil {
				tc.mutate(&req)
			}
			h := NewSchedulingGate(nil, Options{OperatorNamespace: operatorNamespace})
			resp, d := h.handle(t.Context(), req)
			if d.skip != tc.wantSkip || (d.err != nil) != tc.wantErr {
				t.Errorf("decision = %+v, want skip %q, error %t", d, tc.wantSkip, tc.wantErr)
			}
			// The handler never denies, whatever the request.
			if !resp.Allowed {
				t.Errorf("request denied: %+v", resp.Result)
			}
			if diff := cmp.Diff(tc.wantPatches, resp.Patches); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}

			// What the apiserver gets: a JSON patch, and nothing when the pod is skipped.
			if err := resp.Complete(req); err != nil {
				t.Fatal(err)
			}
			if len(tc.wantPatches) == 0 {
				if resp.Patch != nil || resp.PatchType != nil {
					t.Errorf("skipped pod got a patch %s", resp.Patch)
				}
				return
			}
			if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Errorf("patch type = %v, want JSONPatch", resp.PatchType)
			}
			assertPatchGates(t, tc.pod, resp.Patch)
		})
	}
}

// assertPatchGates applies the patch to the pod as the apiserver would and checks the result
// is the original pod plus the gate and the label.
func assertPatchGates(t *testing.T, raw string, patch []byte) {
	t.Helper()
	before, after := applyPatch(t, raw, patch)
	want := before.DeepCopy()
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	want.Labels[v1beta1.LabelSchedulingGate] = v1beta1.LabelValueGated
	if !v1beta1.HasSchedulingGate(&want.Spec) {
		want.Spec.SchedulingGates = append(want.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1beta1.SchedulingGateName})
	}
	if diff := cmp.Diff(want, after); diff != "" {
		t.Errorf("patched pod (-want +got):\n%s", diff)
	}
}

// applyPatch applies the JSON patch to the pod raw as the apiserver would, and returns the pod
// before and after.
func applyPatch(t *testing.T, raw string, patch []byte) (before, after *corev1.Pod) {
	t.Helper()
	decoded, err := jsonpatchv5.DecodePatch(patch)
	if err != nil {
		t.Fatalf("invalid JSON patch %s: %v", patch, err)
	}
	patched, err := decoded.Apply([]byte(raw))
	if err != nil {
		t.Fatalf("applying %s: %v", patch, err)
	}
	before, after = &corev1.Pod{}, &corev1.Pod{}
	if err := json.Unmarshal([]byte(raw), before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(patched, after); err != nil {
		t.Fatal(err)
	}
	return before, after
}

func TestHandleRecordsMetrics(t *testing.T) {
	m := NewMetrics()
	h := NewSchedulingGate(nil, Options{OperatorNamespace: operatorNamespace, Metrics: m})
	requests := []string{
		`{"metadata":{"name":"a","namespace":"team"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
		`{"metadata":{"name":"b","namespace":"team"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
		`{"metadata":{"name":"c","namespace":"kube-system"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
		`{"metadata":{"name":"d","namespace":"team"},"spec":{"nodeName":"n","containers":[{"name":"c","image":"nginx"}]}}`,
		`{"metadata":{"name":"e","namespace":"team"},"spec":{"containers":"oops"}}`,
	}
	for _, raw := range requests {
		h.Handle(context.Background(), podRequest(t, raw))
	}
	got := map[string]float64{
		"processed":       counterValue(t, m.podsProcessed),
		"gated":           counterValue(t, m.podsGated),
		"skipped/ns":      counterValue(t, m.podsSkipped.WithLabelValues(string(SkipReservedNamespace))),
		"skipped/node":    counterValue(t, m.podsSkipped.WithLabelValues(string(SkipNodeNameSet))),
		"skipped/ds":      counterValue(t, m.podsSkipped.WithLabelValues(string(SkipDaemonSet))),
		"skipped/undec":   counterValue(t, m.podsSkipped.WithLabelValues(string(SkipUndecodable))),
		"failedIntercept": counterValue(t, m.failedIntercepts),
	}
	want := map[string]float64{
		"processed": 5, "gated": 2, "skipped/ns": 1, "skipped/node": 1, "skipped/ds": 0, "skipped/undec": 1, "failedIntercept": 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

func TestNewSchedulingGateDefaults(t *testing.T) {
	h := NewSchedulingGate(nil, Options{})
	if h.opts.Metrics == nil {
		t.Fatal("no default metrics")
	}
	// The zero Options gate pods in any non-reserved namespace.
	req := podRequest(t, `{"metadata":{"name":"p","namespace":"archgate-system"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)
	if resp := h.Handle(context.Background(), req); len(resp.Patches) != 2 {
		t.Errorf("patches = %v, want the gate and the label", resp.Patches)
	}
}

// FuzzSchedulingGateHandle feeds arbitrary bytes to the gating handler, both as the object of
// a pod CREATE request and as a whole HTTP request body through the webhook server's handler:
// nothing may panic, the handler never denies, and a patch, when there is one, applies to the
// object and yields a pod with the gate and the label.
func FuzzSchedulingGateHandle(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`), "team")
	f.Add([]byte(`{"metadata":{"name":"p","labels":null},"spec":{"schedulingGates":[{"name":"x"}],"containers":"oops"}}`), "team")
	f.Add([]byte(`{"metadata":{"labels":{"multiarch.openshift.io/scheduling-gate":"removed"}},"spec":{"nodeSelector":{"kubernetes.io/arch":"arm64"}}}`), "kube-system")
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"CREATE","kind":{"version":"v1","kind":"Pod"},"object":{}}}`), "")
	f.Add([]byte("\x00\xff"), "team")
	h := NewSchedulingGate(nil, Options{OperatorNamespace: operatorNamespace})
	server := &admission.Webhook{Handler: h}
	f.Fuzz(func(t *testing.T, data []byte, namespace string) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID:       "uid-1",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: data},
		}}
		resp := h.Handle(context.Background(), req)
		if !resp.Allowed {
			t.Fatalf("denied: %+v", resp.Result)
		}
		// The apiserver always sends a serialized Pod, with "metadata" and "spec" objects; the
		// patch is only required to apply to such objects.
		var top map[string]json.RawMessage
		wellFormed := json.Unmarshal(data, &top) == nil && isJSONObject(top["metadata"]) && isJSONObject(top["spec"])
		if len(resp.Patches) > 0 && wellFormed {
			pod := patchedPod(t, resp, req, data)
			if pod.Labels[v1beta1.LabelSchedulingGate] != v1beta1.LabelValueGated || !v1beta1.HasSchedulingGate(&pod.Spec) {
				t.Errorf("patched pod lacks the gate or the label: %+v", pod.ObjectMeta.Labels)
			}
		}

		// The same bytes as the body of an HTTP admission request: answered, never a panic.
		rec := httptest.NewRecorder()
		httpReq := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(data))
		httpReq.Header.Set("Content-Type", "application/json")
		server.ServeHTTP(rec, httpReq)
		if rec.Code != http.StatusOK {
			t.Errorf("HTTP status %d", rec.Code)
		}
	})
}

// patchedPod completes resp and applies its JSON patch to data, the pod of req, failing the
// test when the patch is not valid, does not apply, or does not yield a pod.
func patchedPod(t *testing.T, resp admission.Response, req admission.Request, data []byte) corev1.Pod {
	t.Helper()
	if err := resp.Complete(req); err != nil {
		t.Fatal(err)
	}
	decoded, err := jsonpatchv5.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("invalid JSON patch %s: %v", resp.Patch, err)
	}
	patched, err := decoded.Apply(data)
	if err != nil {
		t.Fatalf("patch %s does not apply to %q: %v", resp.Patch, data, err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(patched, &pod); err != nil {
		t.Fatalf("patched object is not a pod: %v", err)
	}
	return pod
}

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// panickingKnownImages stands for a bug in admission placement.
type panickingKnownImages struct{}

func (panickingKnownImages) Lookup(string, time.Time) (inspect.Result, bool) { panic("scripted") }

// TestHandleRecoversPanic: a panic while evaluating a pod admits it unchanged (controller-runtime
// would answer an error, a denial whatever the failurePolicy), counted as a failed intercept.
func TestHandleRecoversPanic(t *testing.T) {
	m := NewMetrics()
	configs := fake.NewClientBuilder().WithScheme(placementScheme(t)).Build()
	h := NewSchedulingGate(nil, Options{OperatorNamespace: operatorNamespace, Known: panickingKnownImages{}, Configs: configs, Metrics: m})
	resp := h.Handle(t.Context(), podRequest(t, `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`))
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Fatalf("response = allowed %t, patches %v; want allowed unchanged", resp.Allowed, resp.Patches)
	}
	if got := counterValue(t, m.failedIntercepts); got != 1 {
		t.Errorf("failed intercepts = %v, want 1", got)
	}
	if got := counterValue(t, m.podsSkipped.WithLabelValues(string(SkipPanic))); got != 1 {
		t.Errorf("pods skipped for a panic = %v, want 1", got)
	}
}

// A pod naming more distinct images than maxImagesPerPod is admitted unchanged with a warning
// to its creator: gating it would cost two more writes of a large pod, and the controller would
// release it unplaced anyway. Distinct images count, init containers included.
func TestHandleTooManyImages(t *testing.T) {
	tests := map[string]struct {
		spec      string
		wantGated bool
	}{
		"three images, two allowed": {
			spec: `{"initContainers":[{"name":"i","image":"a"}],"containers":[{"name":"c","image":"b"},{"name":"d","image":"c"}]}`,
		},
		"three containers, two images": {
			spec:      `{"containers":[{"name":"c","image":"a"},{"name":"d","image":"b"},{"name":"e","image":"a"}]}`,
			wantGated: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := NewMetrics()
			h := NewSchedulingGate(nil, Options{Metrics: m, MaxImagesPerPod: 2})
			resp := h.Handle(context.Background(), podRequest(t, `{"metadata":{"name":"p","namespace":"team"},"spec":`+tc.spec+`}`))
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			skipped := counterValue(t, m.podsSkipped.WithLabelValues(string(SkipTooManyImages)))
			if tc.wantGated {
				if len(resp.Patches) != 2 || skipped != 0 || len(resp.Warnings) != 0 {
					t.Errorf("patches %v, skipped %v, warnings %v; want the pod gated", resp.Patches, skipped, resp.Warnings)
				}
				return
			}
			want := []string{"archgate: the pod names 3 images, more than maxImagesPerPod (2): it is not placed by architecture"}
			if len(resp.Patches) != 0 || skipped != 1 || !slices.Equal(resp.Warnings, want) {
				t.Errorf("patches %v, skipped %v, warnings %q; want none, 1, %q", resp.Patches, skipped, resp.Warnings, want)
			}
		})
	}
}
