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
	"slices"

	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Summary is the explanation as data, for `archgate explain -o json|yaml`: what Render prints,
// without the prose.
type Summary struct {
	// Pod is namespace/name.
	Pod   string `json:"pod"`
	Phase string `json:"phase"`
	// Node is the node the pod is bound to, and NodeArchitecture its kubernetes.io/arch.
	Node             string `json:"node,omitempty"`
	NodeArchitecture string `json:"nodeArchitecture,omitempty"`
	// Misplaced is set when the pod is bound and every image was inspected: true when the
	// node's architecture is not one every image supports.
	Misplaced *bool `json:"misplaced,omitempty"`
	// SchedulingGates are the names of the pod's scheduling gates (archgate's and others).
	SchedulingGates []string `json:"schedulingGates"`
	// AdmissionReasons say why the webhook gated the pod or not.
	AdmissionReasons []string `json:"admissionReasons"`
	// Labels and Annotations are those archgate wrote on the pod.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Images are the containers' images and what inspection found, in pod order.
	Images []SummaryImage `json:"images"`
	// Inspected is false when the images were not inspected (--no-inspect). Compatible are the
	// architectures every inspected image supports; CompatibleComplete is false when some
	// image could not be inspected.
	Inspected          bool     `json:"inspected"`
	Compatible         []string `json:"compatible,omitempty"`
	CompatibleComplete bool     `json:"compatibleComplete"`
	// ArchitectureConstraints are the pod's constraints on kubernetes.io/arch (node selector,
	// required and preferred affinity), as Render prints them.
	ArchitectureConstraints []string `json:"architectureConstraints"`
	// PodPlacementConfigs are namespace/name of the PodPlacementConfigs that apply, highest
	// priority first.
	PodPlacementConfigs []string `json:"podPlacementConfigs,omitempty"`
	// Events are the Events about the pod, oldest first.
	Events []SummaryEvent `json:"events,omitempty"`
}

// SummaryImage is one container's image in a Summary.
type SummaryImage struct {
	Container string `json:"container"`
	Init      bool   `json:"init,omitempty"`
	Image     string `json:"image"`
	// Architectures are those the image supports; AnyArchitecture marks an image without
	// binaries (operator bundles); Error is why it could not be inspected.
	Architectures   []string `json:"architectures,omitempty"`
	AnyArchitecture bool     `json:"anyArchitecture,omitempty"`
	Error           string   `json:"error,omitempty"`
}

// SummaryEvent is one Event about the pod.
type SummaryEvent struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Source  string `json:"source"`
	Message string `json:"message"`
}

// Summarize returns the facts as a Summary.
func Summarize(f Facts) Summary {
	pod := f.Pod
	s := Summary{
		Pod:                     pod.Namespace + "/" + pod.Name,
		Phase:                   phase(pod),
		Node:                    pod.Spec.NodeName,
		SchedulingGates:         []string{},
		AdmissionReasons:        admissionReasons(f),
		Inspected:               f.Inspected,
		ArchitectureConstraints: archAffinity(pod),
	}
	for _, g := range pod.Spec.SchedulingGates {
		s.SchedulingGates = append(s.SchedulingGates, g.Name)
	}
	for _, k := range writtenLabels() {
		if v, ok := pod.Labels[k]; ok {
			if s.Labels == nil {
				s.Labels = map[string]string{}
			}
			s.Labels[k] = v
		}
	}
	for _, k := range writtenAnnotations() {
		if v, ok := pod.Annotations[k]; ok {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[k] = v
		}
	}
	for _, img := range f.Images {
		si := SummaryImage{Container: img.Container, Init: img.Init, Image: img.Ref}
		switch {
		case !f.Inspected:
		case img.Err != nil:
			si.Error = img.Err.Error()
		default:
			si.Architectures, si.AnyArchitecture = img.Result.Architectures, img.Result.AnyArchitecture
		}
		s.Images = append(s.Images, si)
	}
	if f.Inspected {
		s.Compatible, s.CompatibleComplete = f.Compatible()
	}
	if f.Node != nil {
		s.NodeArchitecture = f.Node.Labels[v1beta1.NodeArchLabel]
		if f.Inspected && s.CompatibleComplete {
			s.Misplaced = ptr.To(!slices.Contains(s.Compatible, s.NodeArchitecture))
		}
	}
	for _, c := range f.Configs {
		s.PodPlacementConfigs = append(s.PodPlacementConfigs, c.Namespace+"/"+c.Name)
	}
	for _, e := range f.Events {
		s.Events = append(s.Events, SummaryEvent{Type: e.Type, Reason: e.Reason, Source: reporter(e), Message: e.Message})
	}
	return s
}
