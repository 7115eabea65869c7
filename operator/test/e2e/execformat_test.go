//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/execformatmonitor"
	"github.com/archgate/archgate/operator/pkg/testing/realnode"
)

// execFormatBound bounds the wait for the monitor's label: the image pull, the first failed
// start and the monitor's leader taking over after the controller's rollout take a few seconds.
const execFormatBound = 2 * time.Minute

// testExecFormatError: with the monitor enabled on the ClusterPodPlacementConfig, a pod the user
// pins to the real amd64 node (spec.nodeName: the webhook leaves it alone, the scheduler is
// bypassed) whose image is archgate's own linux/arm64 image, referenced by digest, fails with
// the runtime's real exec format error and is labelled, with exactly one Warning Event, even
// after the kubelet restarted it.
func testExecFormatError(ctx context.Context, e *env) {
	e.enableExecFormatMonitor(ctx)
	ns := e.newNamespace(ctx, "execformat")
	start := time.Now()
	created, err := e.cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned-arm64"},
		Spec: corev1.PodSpec{
			NodeName: realnode.NodeName,
			Containers: []corev1.Container{{
				Name: "archgate", Image: e.arm64ArchgateImage(),
				// runc writes its exec error to the container's output only: without this the
				// status says Error, exit code 1, and not why (docs/operations.md).
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	// First the runtime's report in the status (the pull and the start), then the monitor's label:
	// a timeout says which of the two did not happen.
	var pod *corev1.Pod
	e.waitWithin(ctx, execFormatBound, "an exec format error in the status of pod "+ns+"/"+created.Name, func() bool {
		pod, err = e.cs.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err == nil && pullFailed(pod) {
			e.t.Fatalf("pod %s/%s: %s (the registry serves bin/image as it was at cluster-up: after a rebuild, make cluster-down first)", ns, pod.Name, describeFailure(pod))
		}
		return err == nil && strings.Contains(strings.ToLower(describeFailure(pod)), "exec format error")
	})
	seen := time.Now()
	e.t.Logf("container status on %s %s after creation: %s", pod.Spec.NodeName, seen.Sub(start).Round(time.Millisecond), describeFailure(pod))
	e.waitWithin(ctx, execFormatBound, "label "+v1beta1.LabelExecFormatError+"="+v1beta1.LabelValueTrue+" on pod "+ns+"/"+created.Name, func() bool {
		pod, err = e.cs.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		return err == nil && pod.Labels[v1beta1.LabelExecFormatError] == v1beta1.LabelValueTrue
	})
	e.t.Logf("figure: exec format error detection latency: %s (error seen in the status to label seen; polled every 200 ms), %s from pod creation",
		time.Since(seen).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	e.waitEvent(ctx, pod, execformatmonitor.ReasonExecFormatError)
	// The kubelet restarts the container and the runtime fails again: still one Event.
	e.waitWithin(ctx, execFormatBound, "a restart of pod "+ns+"/"+pod.Name, func() bool {
		pod, err = e.cs.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		return err == nil && len(pod.Status.ContainerStatuses) == 1 && pod.Status.ContainerStatuses[0].RestartCount >= 1
	})
	e.checkOneWarning(ctx, pod, execformatmonitor.ReasonExecFormatError)
}

// enableExecFormatMonitor turns the plugin on in the ClusterPodPlacementConfig as a user would
// (a patch of the CR) and waits until the operator rendered the flag into the controller and
// the controller rolled out.
func (e *env) enableExecFormatMonitor(ctx context.Context) {
	e.t.Helper()
	patch := []byte(`{"spec":{"plugins":{"execFormatErrorMonitor":{"enabled":true}}}}`)
	if _, err := e.dyn.Resource(cppcResource()).Patch(ctx, "cluster", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor(ctx, "--exec-format-error-monitor in archgate-controller's arguments", func() bool {
		d, err := e.cs.AppsV1().Deployments(namespace).Get(ctx, "archgate-controller", metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
			return slices.Contains(c.Args, "--exec-format-error-monitor")
		})
	})
	e.waitRolledOut(ctx, namespace, "archgate-controller")
}

// arm64ArchgateImage returns the cluster registry's reference, by digest, of the linux/arm64
// image of archgate's index (bin/image, which the registry serves as archgate/archgate when it
// existed at cluster-up).
func (e *env) arm64ArchgateImage() string {
	e.t.Helper()
	p, err := layout.FromPath(filepath.Join(repoRoot, "bin", "image"))
	if err != nil {
		e.t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		e.t.Fatal(err)
	}
	tops, err := top.IndexManifest()
	if err != nil || len(tops.Manifests) == 0 {
		e.t.Fatalf("bin/image/index.json: %v manifests, error %v", tops, err)
	}
	idx, err := top.ImageIndex(tops.Manifests[0].Digest)
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == "arm64" {
			return realnode.Registry + "/archgate/archgate@" + d.Digest.String()
		}
	}
	e.t.Fatalf("bin/image: no linux/arm64 manifest in index %s", tops.Manifests[0].Digest)
	return ""
}

// describeFailure prints the container's current and last state as the kubelet reported them.
func describeFailure(pod *corev1.Pod) string {
	var parts []string
	for _, s := range pod.Status.ContainerStatuses {
		for what, st := range map[string]corev1.ContainerState{"state": s.State, "last state": s.LastTerminationState} {
			switch {
			case st.Terminated != nil:
				parts = append(parts, fmt.Sprintf("%s terminated %s, exit code %d, message %q", what, st.Terminated.Reason, st.Terminated.ExitCode, st.Terminated.Message))
			case st.Waiting != nil:
				parts = append(parts, fmt.Sprintf("%s waiting %s, message %q", what, st.Waiting.Reason, st.Waiting.Message))
			}
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// pullFailed reports whether the kubelet could not pull a container's image.
func pullFailed(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool {
		return s.State.Waiting != nil && (s.State.Waiting.Reason == "ErrImagePull" || s.State.Waiting.Reason == "ImagePullBackOff")
	})
}

// checkOneWarning checks that exactly one Warning Event of the reason was recorded about the pod.
func (e *env) checkOneWarning(ctx context.Context, pod *corev1.Pod, reason string) {
	e.t.Helper()
	selector := fields.Set{"involvedObject.name": pod.Name, "reason": reason}.String()
	events, err := e.cs.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Type != corev1.EventTypeWarning || events.Items[0].Count > 1 {
		e.t.Errorf("pod %s/%s after %d restarts: %d %s Events %v, want exactly one Warning", pod.Namespace, pod.Name,
			pod.Status.ContainerStatuses[0].RestartCount, len(events.Items), reason, events.Items)
	}
}
