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

// Package ungate releases pods held by archgate's scheduling gate: it removes the gate without
// touching the pod's affinity and labels the pod as released. The operator uses it when the
// ClusterPodPlacementConfig is deleted; `archgate ungate` uses it in emergencies.
package ungate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Action is what happened, or would happen, to one pod.
type Action string

// Actions.
const (
	// ActionReleased: the gate was removed and the pod labelled released.
	ActionReleased Action = "released"
	// ActionWouldRelease: dry run; the pod would be released.
	ActionWouldRelease Action = "would-release"
	// ActionAlreadyDone: the pod was no longer gated (the pod placement controller or someone
	// else got there first) or no longer exists.
	ActionAlreadyDone Action = "already-done"
	// ActionFailed: the pod could not be released; Outcome.Err says why.
	ActionFailed Action = "failed"
)

// Outcome is the result for one pod.
type Outcome struct {
	// Pod names the pod.
	Pod types.NamespacedName
	// Action is what happened.
	Action Action
	// Err is set when Action is ActionFailed.
	Err error
}

// Summary counts the outcomes of a Release.
type Summary struct {
	// Selected is the number of gated pods found.
	Selected int
	// Released, WouldRelease, AlreadyDone and Failed count the outcomes by action.
	Released, WouldRelease, AlreadyDone, Failed int
	// Errors holds the first errors (at most maxErrors), for reporting.
	Errors []error
}

// Remaining is the number of selected pods that may still be gated.
func (s Summary) Remaining() int { return s.Selected - s.Released - s.AlreadyDone }

const maxErrors = 5

// Defaults of Options.
const (
	// DefaultWorkers is the number of pods released concurrently.
	DefaultWorkers = 16
	// DefaultPageSize is the page size of the pod list.
	DefaultPageSize = 500
	// maxAttempts bounds the retries of one pod after conflicts.
	maxAttempts = 5
)

// Options selects the pods to release and how.
type Options struct {
	// Namespace restricts the release to one namespace; empty means every namespace.
	Namespace string
	// Selector further restricts the pods (ANDed with the gated label); nil means no restriction.
	Selector labels.Selector
	// DryRun reports what would be released without changing anything.
	DryRun bool
	// Workers is the number of concurrent releases; DefaultWorkers when zero.
	Workers int
	// PageSize is the list page size; DefaultPageSize when zero.
	PageSize int64
	// Report, when set, is called once per pod, from the worker goroutines, possibly concurrently.
	Report func(Outcome)
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	return o
}

// GatedSelector returns the label selector of gated pods, ANDed with extra (which may be nil).
func GatedSelector(extra labels.Selector) (labels.Selector, error) {
	req, err := labels.NewRequirement(v1beta1.LabelSchedulingGate, selection.Equals, []string{v1beta1.LabelValueGated})
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
func Release(ctx context.Context, c client.Client, opts Options) (Summary, error) {
	opts = opts.withDefaults()
	sel, err := GatedSelector(opts.Selector)
	if err != nil {
		return Summary{}, err
	}

	var (
		mu  sync.Mutex
		sum Summary
		wg  sync.WaitGroup
	)
	record := func(o Outcome) {
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
			if len(sum.Errors) < maxErrors {
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
				record(releaseOne(ctx, c, pod, opts.DryRun))
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
func releaseOne(ctx context.Context, c client.Client, pod *corev1.Pod, dryRun bool) Outcome {
	key := client.ObjectKeyFromObject(pod)
	var lastErr error
	for attempt := range maxAttempts {
		if attempt > 0 {
			fresh := &corev1.Pod{}
			if err := c.Get(ctx, key, fresh); err != nil {
				if apierrors.IsNotFound(err) {
					return Outcome{Pod: key, Action: ActionAlreadyDone}
				}
				return Outcome{Pod: key, Action: ActionFailed, Err: err}
			}
			pod = fresh
		}
		patch, ok := ReleasePatch(pod)
		if !ok {
			return Outcome{Pod: key, Action: ActionAlreadyDone}
		}
		if dryRun {
			return Outcome{Pod: key, Action: ActionWouldRelease}
		}
		err := c.Patch(ctx, pod, client.RawPatch(types.JSONPatchType, patch))
		switch {
		case err == nil:
			return Outcome{Pod: key, Action: ActionReleased}
		case apierrors.IsNotFound(err):
			return Outcome{Pod: key, Action: ActionAlreadyDone}
		case ctx.Err() != nil:
			return Outcome{Pod: key, Action: ActionFailed, Err: ctx.Err()}
		case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
			return Outcome{Pod: key, Action: ActionFailed, Err: err}
		}
		// A failed "test" operation (someone changed the pod), a conflict or a transient error:
		// re-read and retry after a short pause.
		lastErr = err
		select {
		case <-ctx.Done():
			return Outcome{Pod: key, Action: ActionFailed, Err: ctx.Err()}
		case <-time.After(time.Duration(attempt*attempt) * 20 * time.Millisecond):
		}
	}
	return Outcome{Pod: key, Action: ActionFailed, Err: fmt.Errorf("gave up after %d attempts: %w", maxAttempts, lastErr)}
}

// patchOp is one JSON patch (RFC 6902) operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// ReleasePatch returns the JSON patch that releases pod: it removes archgate's scheduling gate
// (other gates stay), sets the gated label to removed and the placement label to released. Its
// "test" operations make it fail if another writer changed the gate or the label meanwhile.
// ok is false when the pod is not gated by archgate (nothing to do).
func ReleasePatch(pod *corev1.Pod) (patch []byte, ok bool) {
	gateIdx := slices.IndexFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == v1beta1.SchedulingGateName
	})
	labelGated := pod.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueGated
	if gateIdx < 0 && !labelGated {
		return nil, false
	}
	gateLabel := "/metadata/labels/" + escape(v1beta1.LabelSchedulingGate)
	var ops []patchOp
	if gateIdx >= 0 {
		gatePath := "/spec/schedulingGates/" + strconv.Itoa(gateIdx)
		ops = append(ops,
			patchOp{Op: "test", Path: gatePath + "/name", Value: v1beta1.SchedulingGateName},
			patchOp{Op: "remove", Path: gatePath},
		)
	}
	switch {
	case pod.Labels == nil:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/labels", Value: map[string]string{
			v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved,
			v1beta1.LabelPlacement:      v1beta1.PlacementReleased,
		}})
	default:
		if labelGated {
			ops = append(ops, patchOp{Op: "test", Path: gateLabel, Value: v1beta1.LabelValueGated})
		}
		ops = append(ops,
			patchOp{Op: "add", Path: gateLabel, Value: v1beta1.LabelValueRemoved},
			patchOp{Op: "add", Path: "/metadata/labels/" + escape(v1beta1.LabelPlacement), Value: v1beta1.PlacementReleased},
		)
	}
	b, err := json.Marshal(ops)
	if err != nil {
		panic(err) // marshalling strings and maps of strings cannot fail
	}
	return b, true
}

// escape escapes a JSON pointer reference token (RFC 6901).
func escape(token string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}
