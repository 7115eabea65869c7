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

package podplacement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-openapi/jsonpointer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
)

// ReleaseAction is what happened, or would happen, to one pod released without inspection.
type ReleaseAction string

// Release actions.
const (
	// ActionReleased: the gate was removed and the pod labelled released.
	ActionReleased ReleaseAction = "released"
	// ActionWouldRelease: dry run; the pod would be released.
	ActionWouldRelease ReleaseAction = "would-release"
	// ActionAlreadyDone: the pod was no longer gated (the pod placement controller or someone
	// else got there first) or no longer exists.
	ActionAlreadyDone ReleaseAction = "already-done"
	// ActionFailed: the pod could not be released; ReleaseOutcome.Err says why.
	ActionFailed ReleaseAction = "failed"
)

// ReleaseOutcome is the result of the release of one pod.
type ReleaseOutcome struct {
	// Pod names the pod.
	Pod types.NamespacedName
	// Action is what happened.
	Action ReleaseAction
	// Err is set when Action is ActionFailed.
	Err error
}

// ReleaseSummary counts the outcomes of a Release.
type ReleaseSummary struct {
	// Selected is the number of gated pods found.
	Selected int
	// Released, WouldRelease, AlreadyDone and Failed count the outcomes by action.
	Released, WouldRelease, AlreadyDone, Failed int
	// Errors holds the first errors (at most maxErrors), for reporting.
	Errors []error
}

// Remaining is the number of selected pods that may still be gated.
func (s ReleaseSummary) Remaining() int { return s.Selected - s.Released - s.AlreadyDone }

const maxReleaseErrors = 5

// Defaults of ReleaseOptions.
const (
	// DefaultReleaseWorkers is the number of pods released concurrently.
	DefaultReleaseWorkers = 16
	// DefaultReleasePageSize is the page size of the pod list.
	DefaultReleasePageSize = 500
	// maxReleaseAttempts bounds the retries of one pod after conflicts.
	maxReleaseAttempts = 5
)

// ReleaseOptions selects the pods to release and how.
type ReleaseOptions struct {
	// Namespace restricts the release to one namespace; empty means every namespace.
	Namespace string
	// Selector further restricts the pods (ANDed with the gated label); nil means no restriction.
	Selector labels.Selector
	// DryRun reports what would be released without changing anything.
	DryRun bool
	// ServerDryRun sends each release with dryRun=All: the apiserver checks and admits the patch
	// (validation, admission webhooks and policies) without persisting it, and the pod is reported
	// as one that would be released. Ignored with DryRun.
	ServerDryRun bool
	// Workers is the number of concurrent releases; DefaultReleaseWorkers when zero.
	Workers int
	// PageSize is the list page size; DefaultReleasePageSize when zero.
	PageSize int64
	// Report, when set, is called once per pod, from the worker goroutines, possibly concurrently.
	Report func(ReleaseOutcome)
	// Local releases the local scheduling gate (LocalReleasePatch) instead of archgate's.
	Local bool
}

func (o ReleaseOptions) withDefaults() ReleaseOptions {
	if o.Workers <= 0 {
		o.Workers = DefaultReleaseWorkers
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultReleasePageSize
	}
	return o
}

// GatedSelector returns the label selector of gated pods, ANDed with extra (which may be nil).
func GatedSelector(extra labels.Selector) (labels.Selector, error) {
	return gatedSelector(v1beta1.LabelSchedulingGate, extra)
}

// gatedSelector is GatedSelector for the gated label named label.
func gatedSelector(label string, extra labels.Selector) (labels.Selector, error) {
	req, err := labels.NewRequirement(label, selection.Equals, []string{v1beta1.LabelValueGated})
	if err != nil {
		return nil, err
	}
	sel := labels.NewSelector().Add(*req)
	if extra != nil {
		reqs, selectable := extra.Requirements()
		if !selectable {
			return nil, errors.New("the selector selects nothing")
		}
		sel = sel.Add(reqs...)
	}
	return sel, nil
}

// Release lists the gated pods the options select, page by page, and releases each of them
// with bounded concurrency. The context bounds the whole run: when it ends, Release returns
// what it did so far together with the context's error. Conflicts with concurrent writers
// (the pod placement controller) are resolved by re-reading the pod.
func Release(ctx context.Context, c client.Client, opts ReleaseOptions) (ReleaseSummary, error) {
	opts = opts.withDefaults()
	g := clusterGate
	if opts.Local {
		g = localGate
	}
	sel, err := gatedSelector(g.label, opts.Selector)
	if err != nil {
		return ReleaseSummary{}, err
	}

	var (
		mu  sync.Mutex
		sum ReleaseSummary
		wg  sync.WaitGroup
	)
	record := func(o ReleaseOutcome) {
		mu.Lock()
		switch o.Action {
		case ActionReleased:
			sum.Released++
		case ActionWouldRelease:
			sum.WouldRelease++
		case ActionAlreadyDone:
			sum.AlreadyDone++
		case ActionFailed:
			sum.Failed++
			if len(sum.Errors) < maxReleaseErrors {
				sum.Errors = append(sum.Errors, fmt.Errorf("pod %s: %w", o.Pod, o.Err))
			}
		}
		mu.Unlock()
		if opts.Report != nil {
			opts.Report(o)
		}
	}

	work := make(chan *corev1.Pod)
	for range opts.Workers {
		wg.Go(func() {
			for pod := range work {
				record(releaseOne(ctx, c, pod, g, opts))
			}
		})
	}

	listOpts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}, client.Limit(opts.PageSize)}
	if opts.Namespace != "" {
		listOpts = append(listOpts, client.InNamespace(opts.Namespace))
	}
	var listErr error
	cont := ""
list:
	for {
		page := &corev1.PodList{}
		if listErr = c.List(ctx, page, append(listOpts, client.Continue(cont))...); listErr != nil {
			listErr = fmt.Errorf("listing gated pods: %w", listErr)
			break
		}
		mu.Lock()
		sum.Selected += len(page.Items)
		mu.Unlock()
		for i := range page.Items {
			select {
			case work <- &page.Items[i]:
			case <-ctx.Done():
				listErr = ctx.Err()
				break list
			}
		}
		if cont = page.Continue; cont == "" {
			break
		}
	}
	close(work)
	wg.Wait()
	return sum, listErr
}

// releaseOne releases pod, re-reading it after a conflict.
func releaseOne(ctx context.Context, c client.Client, pod *corev1.Pod, g gateKind, opts ReleaseOptions) ReleaseOutcome {
	key := client.ObjectKeyFromObject(pod)
	var lastErr error
	for attempt := range maxReleaseAttempts {
		if attempt > 0 {
			fresh := &corev1.Pod{}
			if err := c.Get(ctx, key, fresh); err != nil {
				if apierrors.IsNotFound(err) {
					return ReleaseOutcome{Pod: key, Action: ActionAlreadyDone}
				}
				return ReleaseOutcome{Pod: key, Action: ActionFailed, Err: err}
			}
			pod = fresh
		}
		patch, ok := releasePatch(pod, g)
		if !ok {
			return ReleaseOutcome{Pod: key, Action: ActionAlreadyDone}
		}
		if opts.DryRun {
			return ReleaseOutcome{Pod: key, Action: ActionWouldRelease}
		}
		var patchOpts []client.PatchOption
		done := ActionReleased
		if opts.ServerDryRun {
			patchOpts, done = []client.PatchOption{client.DryRunAll}, ActionWouldRelease
		}
		err := c.Patch(ctx, pod, client.RawPatch(types.JSONPatchType, patch), patchOpts...)
		switch {
		case err == nil:
			return ReleaseOutcome{Pod: key, Action: done}
		case apierrors.IsNotFound(err):
			return ReleaseOutcome{Pod: key, Action: ActionAlreadyDone}
		case ctx.Err() != nil:
			return ReleaseOutcome{Pod: key, Action: ActionFailed, Err: ctx.Err()}
		case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
			return ReleaseOutcome{Pod: key, Action: ActionFailed, Err: err}
		}
		// A failed "test" operation (someone changed the pod), a conflict or a transient error:
		// re-read and retry after a short pause.
		lastErr = err
		select {
		case <-ctx.Done():
			return ReleaseOutcome{Pod: key, Action: ActionFailed, Err: ctx.Err()}
		case <-time.After(time.Duration(attempt*attempt) * 20 * time.Millisecond):
		}
	}
	return ReleaseOutcome{Pod: key, Action: ActionFailed, Err: fmt.Errorf("gave up after %d attempts: %w", maxReleaseAttempts, lastErr)}
}

// The pod placement controller removes the gate with ungate in its one optimistic-lock write;
// releases without inspection (the operator when the ClusterPodPlacementConfig is deleted,
// `archgate ungate`) use ReleasePatch, whose "test" operations guard only the gate and the label,
// so that unrelated changes to the pod do not make thousands of releases conflict.

// patchOp is one JSON patch (RFC 6902) operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// ungate removes the archgate scheduling gate from pod (other gates stay, in order), marks the
// pod ungated and records the outcome and the given annotations.
func ungate(pod *corev1.Pod, outcome placement.Outcome, annotations map[string]string) {
	gates := slices.DeleteFunc(slices.Clone(pod.Spec.SchedulingGates), v1beta1.IsSchedulingGate)
	if len(gates) == 0 {
		gates = nil
	}
	pod.Spec.SchedulingGates = gates
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[v1beta1.LabelSchedulingGate] = v1beta1.LabelValueRemoved
	pod.Labels[v1beta1.LabelPlacement] = outcome.LabelValue()
	if len(annotations) > 0 && pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		pod.Annotations[k] = v
	}
}

// ReleasePatch returns the JSON patch that releases pod: it removes archgate's scheduling gate
// (other gates stay), sets the gated label to removed and the placement label to released. Its
// "test" operations make it fail if another writer changed the gate or the label meanwhile.
// ok is false when the pod is not gated by archgate (nothing to do).
func ReleasePatch(pod *corev1.Pod) (patch []byte, ok bool) {
	return releasePatch(pod, clusterGate)
}

// LocalReleasePatch is ReleasePatch for the local scheduling gate: it removes the local gate and
// sets the local gated label to released (the cluster-wide controller then applies the
// PodPlacementConfigs itself, see placement.ClusterStage).
func LocalReleasePatch(pod *corev1.Pod) (patch []byte, ok bool) {
	return releasePatch(pod, localGate)
}

// gateKind is what a release removes and records for one of the two gates.
type gateKind struct {
	name, label string
	index       func(*corev1.PodSpec) int
	// released are the labels set by the release.
	released map[string]string
}

var (
	clusterGate = gateKind{
		name: v1beta1.SchedulingGateName, label: v1beta1.LabelSchedulingGate, index: v1beta1.SchedulingGateIndex,
		released: map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: v1beta1.PlacementReleased},
	}
	localGate = gateKind{
		name: v1beta1.LocalSchedulingGateName, label: v1beta1.LabelLocalSchedulingGate, index: v1beta1.LocalSchedulingGateIndex,
		released: map[string]string{v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueReleased},
	}
)

func releasePatch(pod *corev1.Pod, g gateKind) (patch []byte, ok bool) {
	gateIdx := g.index(&pod.Spec)
	labelGated := pod.Labels[g.label] == v1beta1.LabelValueGated
	if gateIdx < 0 && !labelGated {
		return nil, false
	}
	var ops []patchOp
	if gateIdx >= 0 {
		gatePath := "/spec/schedulingGates/" + strconv.Itoa(gateIdx)
		ops = append(ops,
			patchOp{Op: "test", Path: gatePath + "/name", Value: g.name},
			patchOp{Op: "remove", Path: gatePath},
		)
	}
	switch {
	case pod.Labels == nil:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/labels", Value: g.released})
	default:
		if labelGated {
			ops = append(ops, patchOp{Op: "test", Path: "/metadata/labels/" + jsonpointer.Escape(g.label), Value: v1beta1.LabelValueGated})
		}
		for _, k := range slices.Sorted(maps.Keys(g.released)) {
			ops = append(ops, patchOp{Op: "add", Path: "/metadata/labels/" + jsonpointer.Escape(k), Value: g.released[k]})
		}
	}
	b, err := json.Marshal(ops)
	if err != nil {
		panic(err) // marshalling strings and maps of strings cannot fail
	}
	return b, true
}
