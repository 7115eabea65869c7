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
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-openapi/jsonpointer"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/internal/placementconfig"
)

// KnownImages answers which architectures an image supports when the controller has published
// it (knownimages.Store).
type KnownImages interface {
	Lookup(image string, now time.Time) (inspect.Result, bool)
}

// Admission placement: a pod whose images the controller has all published gets, in
// the admission patch, exactly what the controller would write when removing the gate
// (placement.Decide, the placement label and the architectures annotation), and no gate. That
// saves the pod the gate-removal write, the controller's work and the scheduler's second look
// (docs/performance.md). Everything else is gated as before, so the controller still handles —
// and reports with Events — every case that needs a judgement:
//
//   - a pod with imagePullSecrets: the controller inspects with the pod's credentials, and serves
//     it only results read with them (inspect.CachingInspector); the webhook reads no secret, and
//     the published results are those of a pod without imagePullSecrets;
//   - an image not published, or expired: the controller inspects it and publishes the result;
//   - images that share no architecture (or none the matching placement rules allow),
//     configurations with an invalid selector, configurations skipped because the pod weights
//     architectures itself, placement rules that could not be evaluated for the pod: the
//     controller records the Events those need (the webhook writes nothing but its answer).
//     (A configuration skipped for a higher-priority one is the documented precedence; it is
//     only counted, here as in the controller.)
//
// A mutating webhook that runs after this one and changes the pod (a mirror rewriter or a policy
// engine that rewrites images, one that adds tolerations) makes the apiserver call this webhook
// again (reinvocationPolicy IfNeeded): the webhook then takes its own additions off and decides on
// the pod as it now is (undo.go), so no pod runs with a placement made for images it no longer
// has.

// placeAtAdmission returns the patch that places pod, which runs images, at admission, or
// ok=false when the pod must be gated. An error reading the configurations is returned for the
// log; the pod is then gated.
func (h *SchedulingGate) placeAtAdmission(ctx context.Context, pod *corev1.Pod, images []string) ([]jsonpatch.JsonPatchOperation, *placement.Decision, bool, error) {
	if h.opts.Known == nil || len(pod.Spec.ImagePullSecrets) > 0 {
		return nil, nil, false, nil
	}
	archs := make([]placement.ImageArchitectures, 0, len(images))
	now := h.opts.Now()
	for _, img := range images {
		r, ok := h.opts.Known.Lookup(img, now)
		if !ok {
			return nil, nil, false, nil
		}
		archs = append(archs, r.Placement())
	}
	cluster, configs, err := h.placementConfigs(ctx, pod.Namespace)
	if err != nil {
		return nil, nil, false, err
	}
	if cluster != nil && cluster.Spec.OperatingSystemPlacementEnabled() {
		// The published images carry their Linux architectures only; until the operator has
		// rolled this webhook out without admission placement, the controller decides.
		return nil, nil, false, nil
	}
	// A pod the namespace's local webhook gated gets only the required affinity here (and no
	// scheduling gate); its local gate carries the namespace's preferences. When the cluster-level
	// preferences are on, it is gated instead: they apply only if no PodPlacementConfig does.
	constraints, rules := placement.ConstraintsOf(cluster, nil), v1beta1.PlacementRulesOf(cluster)
	configs, cluster, wait := placement.ClusterStage(pod, configs, cluster)
	if wait {
		return nil, nil, false, nil
	}
	// The same rules as the controller's, on the pod as admitted; a rule that fails here would
	// fail there too, where the failure is reported.
	evals := h.opts.Rules.Evaluate(ctx, rules, pod)
	if len(evals.Failed()) > 0 {
		return nil, nil, false, nil
	}
	placed := pod.DeepCopy()
	constraints.Rules = evals.Matched()
	d := placement.Decide(placed, archs, configs, cluster, constraints)
	if d.NoCommonArchitecture || d.SelectorErr != nil || len(d.Preferred.Conflicts()) > 0 {
		return nil, nil, false, nil
	}
	ops, err := placementPatch(pod, placed, d)
	if err != nil {
		return nil, nil, false, err
	}
	return ops, &d, true, nil
}

// placementConfigs reads the ClusterPodPlacementConfig (nil when there is none) and the
// PodPlacementConfigs of namespace from the webhook's cache.
func (h *SchedulingGate) placementConfigs(ctx context.Context, namespace string) (*v1beta1.ClusterPodPlacementConfig, []v1beta1.PodPlacementConfig, error) {
	cluster, err := placementconfig.Cluster(ctx, h.opts.Configs)
	if err != nil {
		return nil, nil, err
	}
	configs, err := placementconfig.Namespace(ctx, h.opts.Configs, namespace)
	return cluster, configs, err
}

// placementPatch returns the operations that turn pod into placed, touching nothing else: the
// placement labels and the annotations one by one, and the node affinity as the difference
// between the two typed affinities (fields of the request that these Go types do not know are
// thus never removed). The admission-placement annotation records where the affinity and the
// tolerations were added to (undo.go).
func placementPatch(pod, placed *corev1.Pod, d placement.Decision) ([]jsonpatch.JsonPatchOperation, error) {
	spec, err := specPatch(pod, placed, d)
	if err != nil {
		return nil, err
	}
	record, err := admissionRecord(spec, len(pod.Spec.Tolerations))
	if err != nil {
		return nil, err
	}
	annotations := d.Annotations()
	annotations[v1beta1.AnnotationAdmissionPlacement] = record
	ops := setMapEntries(pod.Labels, "/metadata/labels", map[string]string{
		v1beta1.LabelSchedulingGate: v1beta1.LabelValueAdmission,
		v1beta1.LabelPlacement:      d.Outcome.LabelValue(),
	})
	ops = append(ops, setMapEntries(pod.Annotations, "/metadata/annotations", annotations)...)
	return append(ops, spec...), nil
}

// specPatch returns the operations that add the tolerations and the node affinity of placed to
// pod's spec.
func specPatch(pod, placed *corev1.Pod, d placement.Decision) ([]jsonpatch.JsonPatchOperation, error) {
	ops := appendListItems(len(pod.Spec.Tolerations) > 0, "/spec/tolerations", d.Tolerations)
	if pod.Spec.Affinity == nil {
		if placed.Spec.Affinity != nil {
			ops = append(ops, jsonpatch.NewOperation("add", "/spec/affinity", placed.Spec.Affinity))
		}
		return ops, nil
	}
	before, err := json.Marshal(pod.Spec.Affinity)
	if err != nil {
		return nil, fmt.Errorf("encoding the pod's affinity: %w", err)
	}
	after, err := json.Marshal(placed.Spec.Affinity)
	if err != nil {
		return nil, fmt.Errorf("encoding the placed affinity: %w", err)
	}
	diff, err := jsonpatch.CreatePatch(before, after)
	if err != nil {
		return nil, fmt.Errorf("comparing affinities: %w", err)
	}
	for _, op := range diff {
		op.Path = "/spec/affinity" + op.Path
		ops = append(ops, op)
	}
	return ops, nil
}

// setMapEntries returns the operations that set entries in the string map at path (labels or
// annotations), which is current: the whole map when it is missing, otherwise one operation per
// entry that differs.
func setMapEntries(current map[string]string, path string, entries map[string]string) []jsonpatch.JsonPatchOperation {
	if current == nil {
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", path, entries)}
	}
	var ops []jsonpatch.JsonPatchOperation
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		if v, ok := current[k]; !ok || v != entries[k] {
			ops = append(ops, jsonpatch.NewOperation("add", path+"/"+jsonpointer.Escape(k), entries[k]))
		}
	}
	return ops
}

// appendListItems returns the operations that append items to the list at path: the whole list
// when the pod has none (exists false), otherwise one operation per item.
func appendListItems[T any](exists bool, path string, items []T) []jsonpatch.JsonPatchOperation {
	switch {
	case len(items) == 0:
		return nil
	case !exists:
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", path, items)}
	}
	ops := make([]jsonpatch.JsonPatchOperation, 0, len(items))
	for _, item := range items {
		ops = append(ops, jsonpatch.NewOperation("add", path+"/-", item))
	}
	return ops
}
