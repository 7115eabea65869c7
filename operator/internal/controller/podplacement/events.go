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
	"fmt"
	"strings"

	"github.com/archgate/archgate/operator/internal/placement"
)

// Event reasons. Events are only recorded for anomalies: each one is an apiserver write, and the
// apiserver is what limits pod throughput at scale.
const (
	// reasonInspectionFailed: inspection failed for good (after the retry budget, or a terminal
	// error); the gate was removed without changing the affinity. Warning.
	reasonInspectionFailed = "InspectionFailed"
	// reasonNoCommonArchitecture: the images share no architecture; the pod is kept Pending. Warning.
	reasonNoCommonArchitecture = "NoCommonArchitecture"
	// reasonPreferenceSkipped: placement configurations' preferred weights were skipped because
	// the pod or a higher-priority configuration already prefers architectures. Normal.
	reasonPreferenceSkipped = "PreferredAffinitySkipped"
	// reasonGateAgeExceeded: the pod kept the gate longer than the maximum gate age; the gate was
	// removed without changing the affinity. Warning.
	reasonGateAgeExceeded = "GateAgeExceeded"
	// reasonFallbackArchitecture: inspection failed for good (or the gate outlived maxGateAge)
	// and the pod was placed on the ClusterPodPlacementConfig's fallbackArchitecture; it
	// replaces reasonInspectionFailed or reasonGateAgeExceeded, so the pod still gets one Event.
	reasonFallbackArchitecture = "FallbackArchitectureSet"
	// reasonPlacementRuleFailed: placement rules of the ClusterPodPlacementConfig could not be
	// evaluated for the pod (an error, the cost limit) and did not apply; one Event names them
	// all, with CEL's error. Warning.
	reasonPlacementRuleFailed = "PlacementRuleFailed"
)

// eventAction is the events.k8s.io action of every Event the controller records.
const eventAction = "RemoveSchedulingGate"

// maxNoteLen is the longest Event note the apiserver accepts (events.k8s.io: under 1 kB).
const maxNoteLen = 1000

// maxAnnotationReasonLen bounds the inspection-error annotation.
const maxAnnotationReasonLen = 256

// maxRuleErrorLen bounds each rule's error in a PlacementRuleFailed Event, so that one rule's
// long message does not crowd out the others.
const maxRuleErrorLen = 300

// podEvent is an Event to record once the pod was written.
type podEvent struct {
	eventType string
	reason    string
	note      string
}

// truncate shortens s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// skippedSourcesNote describes the skipped configurations: "PodPlacementConfig team/low
// (HigherPriorityConfig, PodPlacementConfig team/high already prefers architectures); ...".
func skippedSourcesNote(skipped []placement.SkippedSource) string {
	parts := make([]string, 0, len(skipped))
	for _, s := range skipped {
		by := "the pod's own preferred kubernetes.io/arch terms"
		if !s.By.IsPod() {
			by = s.By.String()
		}
		parts = append(parts, fmt.Sprintf("%s (%s: %s already prefer architectures)", s.Source, s.Reason, by))
	}
	return "Preferred architecture weights not applied: " + strings.Join(parts, "; ")
}
