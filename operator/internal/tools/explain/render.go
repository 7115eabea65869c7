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

package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/internal/execformat"
	"github.com/archgate/archgate/operator/internal/placement"
)

// placementMeaning explains each value of the placement label.
var placementMeaning = map[string]string{
	v1beta1.PlacementArchSet:          "the architectures every image supports were merged into the required node affinity",
	v1beta1.PlacementNoCommonArch:     "the images share no architecture: the pod stays Pending on purpose (rebuild an image for a common architecture)",
	v1beta1.PlacementInspectionFailed: "image inspection kept failing past the retry budget: the gate was removed without changing the affinity",
	v1beta1.PlacementUserPinned:       "the pod's own constraints already decide the architecture: the required affinity was left alone",
	v1beta1.PlacementAnyArch:          "every image runs on any architecture (no binaries, e.g. operator bundles): the required affinity was left alone",
	v1beta1.PlacementReleased:         "the gate was removed without inspection (ClusterPodPlacementConfig deleted, or `archgate ungate`)",
}

// Render writes the explanation of f to w, section by section.
func Render(w io.Writer, f Facts) error {
	p := &printer{w: w}
	for _, section := range []func(*printer, Facts){
		writeSummary, writeGates, writeAdmission, writeWritten, writeImages, writeAffinity, writeExecFormatError, writeConfigs, writeEvents,
	} {
		section(p, f)
	}
	return p.err
}

// writeSummary names the pod, its phase and its node.
func writeSummary(p *printer, f Facts) {
	pod := f.Pod
	node := "not bound"
	if pod.Spec.NodeName != "" {
		node = pod.Spec.NodeName
	}
	p.line("Pod %s/%s: phase %s, node %s", pod.Namespace, pod.Name, phase(pod), node)
}

// writeGates lists the pod's scheduling gates and what to do if archgate's stays.
func writeGates(p *printer, f Facts) {
	pod := f.Pod
	p.section("Scheduling gates")
	if len(pod.Spec.SchedulingGates) == 0 {
		p.line("none")
	}
	for _, g := range pod.Spec.SchedulingGates {
		switch {
		case v1beta1.IsLocalSchedulingGate(g):
			p.line("%s (archgate's local gate): namespace %s's local controller has not applied its PodPlacementConfigs yet", g.Name, pod.Namespace)
		case v1beta1.IsSchedulingGate(g):
			p.line("%s (archgate's): the pod placement controller has not processed the pod yet", g.Name)
		default:
			p.line("%s (not archgate's)", g.Name)
		}
	}
	// The local gate goes first: the cluster-wide controller waits for it.
	switch {
	case v1beta1.HasLocalSchedulingGate(&pod.Spec):
		p.line("  If it stays: check the local controller (kubectl -n %s get deploy %s) and the PodPlacementConfigs' conditions;",
			pod.Namespace, operator.LocalControllerComponentName)
		p.line("  `archgate ungate -n %s --gate local --selector ... --dry-run=false` releases it; archgate's cluster-wide gate then applies the preferences.", pod.Namespace)
	case v1beta1.HasSchedulingGate(&pod.Spec):
		p.line("  If it stays: check the controller (kubectl -n %s get deploy archgate-controller) and its events below;",
			orDefault(f.OperatorNamespace, "archgate-system"))
		p.line("  `archgate ungate -n %s --selector ... --dry-run=false` releases the pod without changing its affinity.", pod.Namespace)
	}
}

// writeAdmission says why the webhook looked at the pod.
func writeAdmission(p *printer, f Facts) {
	p.section("Why archgate looked at this pod")
	for _, reason := range admissionReasons(f) {
		p.line("- %s", reason)
	}
}

// writeWritten lists the labels and annotations archgate wrote.
func writeWritten(p *printer, f Facts) {
	pod := f.Pod
	p.section("What archgate wrote on the pod")
	wrote := false
	for _, k := range writtenLabels() {
		if v, ok := pod.Labels[k]; ok {
			wrote = true
			p.line("label %s=%s: %s", k, v, labelMeaning(k, v))
		}
	}
	for _, k := range writtenAnnotations() {
		if v, ok := pod.Annotations[k]; ok {
			wrote = true
			p.line("annotation %s=%s", k, v)
		}
	}
	if !wrote {
		p.line("nothing: the webhook did not gate the pod")
	}
}

// writtenLabels and writtenAnnotations are the keys archgate writes on pods, in the order
// explain shows them.
func writtenLabels() []string {
	return []string{v1beta1.LabelLocalSchedulingGate, v1beta1.LabelSchedulingGate, v1beta1.LabelPlacement,
		v1beta1.LabelFallbackArchitecture, v1beta1.LabelExecFormatError}
}

func writtenAnnotations() []string {
	return []string{v1beta1.AnnotationArchitectures, v1beta1.AnnotationPreferredAffinitySource, v1beta1.AnnotationPlacementRules,
		v1beta1.AnnotationInspectionError, v1beta1.AnnotationAdmissionPlacement, v1beta1.AnnotationAdmissionPolicyPlacement}
}

// writeImages tabulates the containers' images and their architectures, then the intersection.
func writeImages(p *printer, f Facts) {
	p.section("Images")
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tIMAGE\tARCHITECTURES")
	for _, img := range f.Images {
		name := img.Container
		if img.Init {
			name = "init:" + name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, img.Ref, imageArchs(f, img))
	}
	if err := tw.Flush(); err != nil && p.err == nil {
		p.err = err
	}
	if f.CredentialsNote != "" {
		p.line("(inspected without some credentials: %s)", f.CredentialsNote)
	}
	if !f.Inspected {
		return
	}
	archs, complete := f.Compatible()
	if complete {
		p.line("Compatible with every image: %s", listOrNone(archs))
	} else {
		p.line("Compatible with the images inspected: %s (some could not be inspected)", listOrNone(archs))
	}
	if recorded, ok := f.Pod.Annotations[v1beta1.AnnotationArchitectures]; ok && recorded != strings.Join(archs, ",") && complete {
		p.line("Note: the controller recorded %q when it processed the pod; the images changed since (tags move).", recorded)
	}
}

// writeAffinity lists the pod's architecture constraints and judges the node it is bound to.
func writeAffinity(p *printer, f Facts) {
	p.section("Node affinity on " + v1beta1.NodeArchLabel)
	for _, l := range archAffinity(f.Pod) {
		p.line("%s", l)
	}
	if f.Node == nil {
		return
	}
	arch := f.Node.Labels[v1beta1.NodeArchLabel]
	verdict := ""
	if archs, complete := f.Compatible(); f.Inspected && complete {
		if slices.Contains(archs, arch) {
			verdict = ": every image supports it"
		} else {
			verdict = ": NOT supported by every image (misplaced)"
		}
	}
	p.line("bound to node %s (%s=%s)%s", f.Node.Name, v1beta1.NodeArchLabel, arch, verdict)
}

// writeConfigs lists the placement configurations that apply, and those ignored.
func writeConfigs(p *printer, f Facts) {
	p.section("PodPlacementConfigs that apply (highest priority first)")
	if len(f.Configs) == 0 {
		p.line("none")
	}
	if f.ConfigsErr != nil {
		p.line("ignored, as the controller ignores them: %v", f.ConfigsErr)
	}
	for _, c := range f.Configs {
		p.line("%s/%s priority %d%s", c.Namespace, c.Name, c.Spec.Priority, describeScoring(c.Spec.Plugins))
	}
	if f.Cluster != nil && f.Cluster.Spec.Plugins != nil {
		p.line("then ClusterPodPlacementConfig %s%s", f.Cluster.Name, describeScoring(f.Cluster.Spec.Plugins))
	}
}

// writeEvents lists the Events about the pod.
func writeEvents(p *printer, f Facts) {
	p.section("Events")
	if len(f.Events) == 0 {
		p.line("none (archgate reports only anomalies: inspection errors, conflicts, no common architecture)")
	}
	for _, e := range f.Events {
		p.line("%s %s (%s): %s", e.Type, e.Reason, reporter(e), e.Message)
	}
}

// admissionReasons says why the webhook gated the pod or not.
func admissionReasons(f Facts) []string {
	pod := f.Pod
	var out []string
	switch {
	case f.Cluster == nil:
		out = append(out, "no ClusterPodPlacementConfig exists: archgate is not enabled")
	case !f.Cluster.DeletionTimestamp.IsZero():
		out = append(out, "the ClusterPodPlacementConfig is being deleted: gated pods are being released")
	}
	switch {
	case v1beta1.IsReservedNamespace(pod.Namespace):
		out = append(out, fmt.Sprintf("namespace %s is reserved (kube-*, openshift-*, hypershift-*): never gated", pod.Namespace))
	case f.OperatorNamespace != "" && pod.Namespace == f.OperatorNamespace:
		out = append(out, fmt.Sprintf("namespace %s is archgate's own: never gated", pod.Namespace))
	case f.Cluster != nil && f.Namespace != nil:
		sel := f.Cluster.Spec.NamespaceSelector
		if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
			out = append(out, fmt.Sprintf("namespace %s is selected: the namespaceSelector is empty (every namespace)", pod.Namespace))
			break
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("the namespaceSelector is invalid: %v", err))
		case s.Matches(labels.Set(f.Namespace.Labels)):
			out = append(out, fmt.Sprintf("namespace %s is selected by the namespaceSelector %s", pod.Namespace, s))
		default:
			out = append(out, fmt.Sprintf("namespace %s is NOT selected by the namespaceSelector %s: its pods are not gated", pod.Namespace, s))
		}
	}
	switch {
	case slices.ContainsFunc(pod.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" }):
		out = append(out, "the pod belongs to a DaemonSet, which places it on a given node: never gated")
	case placement.NodeSelectorPinsArchitecture(&pod.Spec):
		out = append(out, "spec.nodeSelector pins "+v1beta1.NodeArchLabel+": nothing for archgate to decide, not gated")
	case placement.UserPinsArchitecture(&pod.Spec):
		out = append(out, "the pod's required node affinity already constrains "+v1beta1.NodeArchLabel+
			": archgate leaves it alone and may only add preferences")
	}
	if len(out) == 0 {
		out = append(out, "nothing special: the pod is an ordinary candidate for gating")
	}
	return out
}

func labelMeaning(key, value string) string {
	if key == v1beta1.LabelExecFormatError {
		return "the exec-format-error monitor saw a container fail with an exec format error (see below)"
	}
	if key == v1beta1.LabelFallbackArchitecture {
		return "the images could not be inspected; the pod was placed on the ClusterPodPlacementConfig's fallbackArchitecture"
	}
	if key == v1beta1.LabelPlacement {
		if m, ok := placementMeaning[value]; ok {
			return m
		}
		return "unknown outcome"
	}
	if key == v1beta1.LabelLocalSchedulingGate {
		switch value {
		case v1beta1.LabelValueGated:
			return "the namespace's local webhook gated the pod; its local controller has not removed the local gate yet"
		case v1beta1.LabelValueRemoved:
			return "the local controller applied the namespace's PodPlacementConfigs and removed the local gate"
		case v1beta1.LabelValueReleased:
			return "the operator released the local gate without applying the preferences (local placement turned off or the last PodPlacementConfig deleted); the cluster-wide controller applies them"
		}
		return "unknown value"
	}
	switch value {
	case v1beta1.LabelValueGated:
		return "the webhook gated the pod; the controller has not removed the gate yet"
	case v1beta1.LabelValueRemoved:
		return "the gate was removed"
	}
	return "unknown value"
}

func imageArchs(f Facts, img Image) string {
	switch {
	case !f.Inspected:
		return "(not inspected)"
	case img.Err != nil:
		return "error: " + img.Err.Error()
	case img.Result.AnyArchitecture:
		return "any (no binaries, e.g. an operator bundle)"
	}
	return listOrNone(img.Result.Architectures)
}

// archAffinity lists the pod's constraints on the architecture label.
func archAffinity(pod *corev1.Pod) []string {
	var out []string
	if v, ok := pod.Spec.NodeSelector[v1beta1.NodeArchLabel]; ok {
		out = append(out, fmt.Sprintf("nodeSelector: %s=%s", v1beta1.NodeArchLabel, v))
	}
	na := (*corev1.NodeAffinity)(nil)
	if pod.Spec.Affinity != nil {
		na = pod.Spec.Affinity.NodeAffinity
	}
	if na != nil && na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for i, t := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				if e.Key == v1beta1.NodeArchLabel {
					out = append(out, fmt.Sprintf("required, term %d: %s %s [%s]", i, e.Key, e.Operator, strings.Join(e.Values, " ")))
				}
			}
		}
	}
	if na != nil {
		for _, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			for _, e := range t.Preference.MatchExpressions {
				if e.Key == v1beta1.NodeArchLabel {
					out = append(out, fmt.Sprintf("preferred, weight %d: %s %s [%s]", t.Weight, e.Key, e.Operator, strings.Join(e.Values, " ")))
				}
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "none: the pod may land on any architecture")
	}
	return out
}

func describeScoring(p *v1beta1.Plugins) string {
	if p == nil || p.NodeAffinityScoring == nil || !p.NodeAffinityScoring.Enabled {
		return " (no scoring)"
	}
	var parts []string
	for _, pl := range p.NodeAffinityScoring.Platforms {
		parts = append(parts, fmt.Sprintf("%s=%d", pl.Architecture, pl.Weight))
	}
	return ": prefers " + strings.Join(parts, ", ")
}

func reporter(e corev1.Event) string {
	if e.ReportingController != "" {
		return e.ReportingController
	}
	return e.Source.Component
}

func phase(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			return string(pod.Status.Phase) + " (SchedulingGated)"
		}
	}
	if pod.Status.Phase == "" {
		return "unknown"
	}
	return string(pod.Status.Phase)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// printer writes lines and remembers the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *printer) section(title string) {
	p.line("\n%s:", title)
}

// writeExecFormatError reports a container that failed with an exec format error, from the
// pod's status (the rule the monitor applies), and whether the monitor reported it; nothing
// when there is neither a failure nor the label.
func writeExecFormatError(p *printer, f Facts) {
	finding, found := execformat.FirstFinding(&f.Pod.Status)
	reported := f.Pod.Labels[v1beta1.LabelExecFormatError] == v1beta1.LabelValueTrue
	if !found && !reported {
		return
	}
	p.section("Exec format error")
	if !found {
		p.line("reported by the exec-format-error monitor; the current status no longer shows it (the container was replaced or restarted cleanly)")
		return
	}
	kind := "container"
	if finding.Init {
		kind = "init container"
	}
	p.line("%s %s failed with an exec format error on node %s (kubernetes.io/arch=%s): its binary is for another architecture",
		kind, finding.Container, orDefault(f.Pod.Spec.NodeName, "?"), orDefault(nodeArch(f.Node), "unknown"))
	p.line("  runtime report (%s): %s", finding.Reason, strings.Join(strings.Fields(finding.Message), " "))
	if reported {
		p.line("  reported by the exec-format-error monitor (label %s=%s and a Warning Event)", v1beta1.LabelExecFormatError, v1beta1.LabelValueTrue)
	} else {
		p.line("  not reported: is spec.plugins.execFormatErrorMonitor enabled in the ClusterPodPlacementConfig?")
	}
	p.line("  Fix: rebuild the image for this architecture, or keep the pod off it (see Images and Node affinity above).")
}

// nodeArch is the node's kubernetes.io/arch label; "" when the node is unknown.
func nodeArch(n *corev1.Node) string {
	if n == nil {
		return ""
	}
	return n.Labels[v1beta1.NodeArchLabel]
}
