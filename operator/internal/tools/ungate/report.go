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

// Package ungate is `archgate ungate`, the emergency release of gated pods: it runs
// podplacement.Release (the one home of the release rule, which the operator also uses when the
// ClusterPodPlacementConfig is deleted) and prints what it did.
package ungate

import (
	"context"
	"fmt"
	"io"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/internal/controller/podplacement"
)

// Run releases the selected pods like Release and prints one line per pod, then a summary, to
// out. In a dry run it says what it would do and that nothing changed.
func Run(ctx context.Context, c client.Client, opts podplacement.ReleaseOptions, out io.Writer) (podplacement.ReleaseSummary, error) {
	var mu sync.Mutex
	opts.Report = func(o podplacement.ReleaseOutcome) {
		mu.Lock()
		defer mu.Unlock()
		switch o.Action {
		case podplacement.ActionWouldRelease:
			fmt.Fprintf(out, "would release %s\n", o.Pod)
		case podplacement.ActionReleased:
			fmt.Fprintf(out, "released %s\n", o.Pod)
		case podplacement.ActionAlreadyDone:
			fmt.Fprintf(out, "already released %s\n", o.Pod)
		case podplacement.ActionFailed:
			fmt.Fprintf(out, "FAILED %s: %v\n", o.Pod, o.Err)
		}
	}
	sum, err := podplacement.Release(ctx, c, opts)
	scope := "in every namespace"
	if opts.Namespace != "" {
		scope = "in namespace " + opts.Namespace
	}
	if opts.Selector != nil && !opts.Selector.Empty() {
		scope += " matching " + opts.Selector.String()
	}
	gated := "gated by archgate"
	if opts.Local {
		gated = "carrying the local scheduling gate"
	}
	switch {
	case opts.DryRun:
		fmt.Fprintf(out, "dry run: %d pods %s %s would be released (gate removed, affinity unchanged); nothing changed. Run again with --dry-run=none.\n",
			sum.WouldRelease, gated, scope)
	case opts.ServerDryRun:
		fmt.Fprintf(out, "server dry run: %d pods %s %s would be released, the apiserver admitted each release; %d failed; nothing changed. Run again with --dry-run=none.\n",
			sum.WouldRelease, gated, scope, sum.Failed)
	default:
		fmt.Fprintf(out, "%d pods %s %s: %d released, %d already released, %d failed.\n",
			sum.Selected, gated, scope, sum.Released, sum.AlreadyDone, sum.Failed)
	}
	if err == nil && sum.Failed > 0 {
		err = fmt.Errorf("%d pods could not be released", sum.Failed)
	}
	return sum, err
}
