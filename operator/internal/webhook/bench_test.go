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
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// benchmarkPod is a pod as the apiserver sends it to the webhook: defaulted, with the service
// account volume and the default tolerations, two containers and an init container.
func benchmarkPod(image string) *corev1.Pod {
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			Resources:                corev1.ResourceRequirements{Requests: requests},
			TerminationMessagePath:   corev1.TerminationMessagePathDefault,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			VolumeMounts: []corev1.VolumeMount{{
				Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
			}},
		}
	}
	toleration := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-7d9f8b6c5-x2k9q", Namespace: "team", GenerateName: "web-7d9f8b6c5-",
			Labels: map[string]string{"app": "web", "pod-template-hash": "7d9f8b6c5"},
		},
		Spec: corev1.PodSpec{
			InitContainers:                []corev1.Container{container("init")},
			Containers:                    []corev1.Container{container("app"), container("sidecar")},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			SchedulerName:                 corev1.DefaultSchedulerName,
			SecurityContext:               &corev1.PodSecurityContext{},
			Tolerations:                   []corev1.Toleration{toleration("node.kubernetes.io/not-ready"), toleration("node.kubernetes.io/unreachable")},
			Priority:                      ptr.To[int32](0),
			EnableServiceLinks:            ptr.To(true),
			PreemptionPolicy:              ptr.To(corev1.PreemptLowerPriority),
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				},
				DefaultMode: ptr.To[int32](0o644),
			}}}},
		},
	}
}

// BenchmarkAdmission measures one admission review through the webhook's HTTP handler, as the
// webhook serves it: decoding the review, deciding, encoding the patch and the response. The
// CPU it reports per operation is what each pod creation costs a webhook replica, before TLS.
func BenchmarkAdmission(b *testing.B) {
	cluster := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled: true,
			Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{
				{Architecture: "arm64", Weight: 40}, {Architecture: "amd64", Weight: 10},
			},
		}}},
	}
	for name, image := range map[string]string{"placed": "multi:1", "gated": "unknown:1"} {
		b.Run(name, func(b *testing.B) {
			configs := fake.NewClientBuilder().WithScheme(placementScheme(b)).WithObjects(cluster).Build()
			h := NewSchedulingGate(nil, Options{
				OperatorNamespace: operatorNamespace, Known: publishedIndex(b), Configs: configs,
				Now: func() time.Time { return placeNow },
			})
			server := &admission.Webhook{Handler: h}
			body := admissionReview(b, benchmarkPod(image))
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/gate-pods", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				server.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// admissionReview encodes the CREATE review of pod as the apiserver sends it.
func admissionReview(b *testing.B, pod *corev1.Pod) []byte {
	b.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		b.Fatal(err)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "2f1c1f5e-9b0e-4c1e-8f4e-1d2f3a4b5c6d",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: pod.Namespace,
			Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{
				Username: "system:serviceaccount:kube-system:replicaset-controller",
				Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
			},
			Object:  runtime.RawExtension{Raw: raw},
			Options: runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
			DryRun:  ptr.To(false),
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		b.Fatal(err)
	}
	return body
}
