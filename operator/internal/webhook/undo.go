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
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/go-openapi/jsonpointer"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Undoing an admission placement. A pod placed at admission may come back to the webhook in the
// same admission: another mutating webhook changed it after this one (reinvocationPolicy
// IfNeeded), its images for example. Or it is created as a copy of a placed pod (kubectl debug
// --copy-to --set-image). Its placement was decided for the pod as it was, so the webhook takes
// its own additions off and decides again: placed for the images the pod now runs, or gated for
// the controller. The admission-placement annotation says where the additions are: archgate's
// additions are appended after the user's (or a later webhook's earlier) entries, or are node
// affinity parts that did not exist, so their paths still name them when the pod comes back.
// The user's own constraints are never removed. What a later webhook added inside a node
// affinity part that archgate created goes with it (two webhooks placing one pod disagree anyway);
// tolerations are recorded one by one, so a later webhook's tolerations stay.

// MaxRecordedPaths bounds the record a pod can make the webhook (or the admission policy) read:
// archgate writes one path per required term, preferred list and toleration it added to.
const MaxRecordedPaths = 256

// PlacementAnnotations are the annotations a placement at admission writes, on either path: taking
// the placement off removes them (those the pod has).
func PlacementAnnotations() []string {
	return []string{v1beta1.AnnotationArchitectures, v1beta1.AnnotationPreferredAffinitySource, v1beta1.AnnotationPlacementRules,
		v1beta1.AnnotationAdmissionPlacement, v1beta1.AnnotationAdmissionPolicyPlacement}
}

// wholeAffinity is the recorded path of an affinity that archgate added whole (the pod had
// none): undoing it removes the node affinity and then the affinity, if nothing else is left in it.
const wholeAffinity = "/spec/affinity"

// admissionRecord returns the value of the admission-placement annotation for the spec
// operations of a placement (specPatch): their paths, comma-separated (JSON pointers into these
// fields hold no comma), each toleration with its index, so that a later webhook's tolerations
// are kept when the placement is undone. tolerations is the length of the pod's list before.
func admissionRecord(ops []jsonpatch.JsonPatchOperation, tolerations int) (string, error) {
	var paths []string
	addToleration := func() {
		paths = append(paths, "/spec/tolerations/"+strconv.Itoa(tolerations))
		tolerations++
	}
	for _, op := range ops {
		if op.Operation != "add" {
			return "", fmt.Errorf("admission placement: unexpected %s operation at %s", op.Operation, op.Path)
		}
		switch op.Path {
		case "/spec/tolerations":
			items, _ := op.Value.([]corev1.Toleration)
			for range items {
				addToleration()
			}
		case "/spec/tolerations/-":
			addToleration()
		default:
			paths = append(paths, op.Path)
		}
	}
	// The affinity's difference lists the required and the preferred terms in either order:
	// the required first, as the admission policy records them. (Within each, the entries of a
	// list come in their order, which the undo reverses.)
	slices.SortStableFunc(paths, func(a, b string) int { return recordRank(a) - recordRank(b) })
	return strings.Join(paths, ","), nil
}

// recordRank orders a record: the tolerations, the required terms, the preferred ones.
func recordRank(path string) int {
	switch {
	case strings.HasPrefix(path, "/spec/tolerations"):
		return 0
	case strings.HasPrefix(path, "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution"):
		return 2
	default:
		return 1
	}
}

// parseRecord returns the paths of an admission-placement annotation, refusing any that does
// not name the node affinity or a toleration: whoever wrote the annotation, undoing it touches
// nothing else of the pod.
func parseRecord(value string) ([]string, error) {
	if value == "" {
		return nil, nil
	}
	paths := strings.Split(value, ",")
	if len(paths) > MaxRecordedPaths {
		return nil, fmt.Errorf("it lists %d paths, more than the %d archgate writes at most", len(paths), MaxRecordedPaths)
	}
	for _, p := range paths {
		if p != wholeAffinity && !strings.HasPrefix(p, "/spec/affinity/nodeAffinity") && !strings.HasPrefix(p, "/spec/tolerations/") {
			return nil, fmt.Errorf("path %.100q is neither in the node affinity nor a toleration", p)
		}
	}
	return paths, nil
}

// undoPlacement returns the operations that take the webhook's admission placement off pod
// (decoded from raw, the request's object), and the pod as they leave it: the recorded affinity
// and tolerations removed, last first, and the placement labels and annotations. The record is
// the webhook's, or the admission policy's on a copy of a pod it placed; a pod with neither (not
// placed at admission) gets none. An error says why the record does not fit the pod.
func undoPlacement(raw []byte, pod *corev1.Pod) ([]jsonpatch.JsonPatchOperation, *corev1.Pod, error) {
	key := v1beta1.AnnotationAdmissionPlacement
	record, ok := pod.Annotations[key]
	if !ok {
		// A copy of a pod the admission policy placed, where the policy is no longer in effect
		// (while it is, such pods are the policy's to undo and never reach the webhook).
		// Its record ends with the images it was placed for, after a semicolon.
		key = v1beta1.AnnotationAdmissionPolicyPlacement
		record, ok = pod.Annotations[key]
		record, _, _ = strings.Cut(record, ";")
	}
	if !ok || pod.Labels[v1beta1.LabelSchedulingGate] != v1beta1.LabelValueAdmission {
		return nil, pod, nil
	}
	fail := func(err error) error {
		// The record is the pod creator's to write: its first 200 characters are enough to
		// recognize it in the warning and the log.
		return fmt.Errorf("the %s annotation %.200q does not fit the pod: %w", key, record, err)
	}
	paths, err := parseRecord(record)
	if err != nil {
		return nil, nil, fail(err)
	}
	var ops []jsonpatch.JsonPatchOperation
	for _, p := range slices.Backward(paths) {
		if p == wholeAffinity {
			p = wholeAffinity + "/nodeAffinity"
		}
		ops = append(ops, jsonpatch.NewOperation("remove", p, nil))
	}
	ops = append(ops, removeMapEntries(pod.Labels, "/metadata/labels", v1beta1.LabelSchedulingGate, v1beta1.LabelPlacement)...)
	ops = append(ops, removeMapEntries(pod.Annotations, "/metadata/annotations", PlacementAnnotations()...)...)
	undone, err := applyOperations(raw, ops)
	if err != nil {
		return nil, nil, fail(err)
	}
	if a := undone.Spec.Affinity; slices.Contains(paths, wholeAffinity) && a != nil && a.NodeAffinity == nil && a.PodAffinity == nil && a.PodAntiAffinity == nil {
		ops = append(ops, jsonpatch.NewOperation("remove", wholeAffinity, nil))
		undone.Spec.Affinity = nil
	}
	return ops, undone, nil
}

// removeMapEntries returns the operations that remove the keys current (labels or annotations at
// path) holds.
func removeMapEntries(current map[string]string, path string, keys ...string) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	for _, k := range keys {
		if _, ok := current[k]; ok {
			ops = append(ops, jsonpatch.NewOperation("remove", path+"/"+jsonpointer.Escape(k), nil))
		}
	}
	return ops
}

// applyOperations applies ops to the pod raw as the apiserver will, and decodes the result.
func applyOperations(raw []byte, ops []jsonpatch.JsonPatchOperation) (*corev1.Pod, error) {
	encoded, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatchv5.DecodePatch(encoded)
	if err != nil {
		return nil, err
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(patched, pod); err != nil {
		return nil, err
	}
	return pod, nil
}
