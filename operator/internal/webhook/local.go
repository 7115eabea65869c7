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
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/internal/placementconfig"
)

// LocalPath is the HTTP path a namespace's local webhook serves.
const LocalPath = "/local-gate-pods"

// LocalGate is the admission handler of a namespace's local webhook (ClusterPodPlacementConfig
// spec.localPlacement): on pod CREATE in its namespace it adds the local scheduling gate and the
// local gated label, for pods that at least one PodPlacementConfig of the namespace selects. It
// never denies and reads only the namespace's PodPlacementConfigs (namespaced RBAC).
type LocalGate struct {
	decoder   admission.Decoder
	namespace string
	configs   client.Reader
}

var _ admission.Handler = (*LocalGate)(nil)

// NewLocalGate returns the handler for namespace; configs reads its PodPlacementConfigs (a
// cached client). scheme must know core/v1 Pods.
func NewLocalGate(scheme *runtime.Scheme, namespace string, configs client.Reader) *LocalGate {
	return &LocalGate{decoder: admission.NewDecoder(scheme), namespace: namespace, configs: configs}
}

// Handle gates a new pod of the namespace with the local gate, or lets it through unchanged.
func (h *LocalGate) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" ||
		req.Namespace != h.namespace {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := h.decoder.Decode(req, pod); err != nil {
		logf.FromContext(ctx).Error(err, "Failed to decode pod, admitting it without the local scheduling gate")
		return admission.Allowed("")
	}
	pod.Namespace = req.Namespace
	configs, err := placementconfig.Namespace(ctx, h.configs, h.namespace)
	if err != nil {
		logf.FromContext(ctx).Error(err, "Admitting the pod without the local scheduling gate")
		return admission.Allowed("")
	}
	if !NeedsLocalGate(pod, configs) {
		return admission.Allowed("")
	}
	return admission.Patched("", addGatePatch(pod, v1beta1.LocalSchedulingGateName, v1beta1.LabelLocalSchedulingGate)...)
}

// NeedsLocalGate reports whether the local webhook gates pod: it is not exempt (exemptReason),
// the pod is not already local-gated, the cluster webhook has not already placed it at admission
// with the PodPlacementConfigs applied (it did so because this webhook had not run yet), and at
// least one of the namespace's configurations selects it with the nodeAffinityScoring plugin on
// (otherwise the gate would cost a write for nothing).
func NeedsLocalGate(pod *corev1.Pod, configs []v1beta1.PodPlacementConfig) bool {
	switch {
	case exemptReason(pod) != "",
		v1beta1.HasLocalSchedulingGate(&pod.Spec),
		pod.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission:
		return false
	}
	sources, _ := placement.ScoringSources(pod, configs, nil, nil)
	return len(sources) > 0
}
