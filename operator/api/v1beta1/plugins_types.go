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

package v1beta1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Plugins holds the optional placement plugins of a ClusterPodPlacementConfig or a
// PodPlacementConfig. The required node affinity on kubernetes.io/arch is not a plugin: it is
// always applied to gated pods.
type Plugins struct {
	// nodeAffinityScoring adds preferred node affinity terms that weight the architectures a
	// pod can run on, so that the scheduler favours some of them (for example cheaper arm64 nodes).
	// +optional
	NodeAffinityScoring *NodeAffinityScoring `json:"nodeAffinityScoring,omitempty"`

	// execFormatErrorMonitor watches the cluster's pods for containers that failed with an
	// exec format error (their binaries are for another CPU architecture than the node's) and
	// reports each such pod: a Warning Event, the multiarch.openshift.io/exec-format-error=true
	// label and a metric by namespace and node architecture. Cluster-wide only: a
	// PodPlacementConfig may not set it.
	// +optional
	ExecFormatErrorMonitor *ExecFormatErrorMonitor `json:"execFormatErrorMonitor,omitempty"`
}

// ExecFormatErrorMonitor configures the exec-format-error monitor plugin.
type ExecFormatErrorMonitor struct {
	// enabled turns the plugin on. A disabled plugin is ignored.
	// +required
	Enabled bool `json:"enabled"`

	// action is what the monitor does beyond reporting a pod: Report (the default) only
	// reports it; DeletePod also deletes it when a ReplicaSet, StatefulSet or
	// ReplicationController controls it (it recreates the pod, which archgate then places where
	// its images run), at most once per such owner every deleteInterval, with a Warning Event
	// ExecFormatErrorPodDeleted on the owner. Pods of a DaemonSet (recreated on the same node), of
	// a Job, or without an owner are only reported. DeletePod grants the controller the right to
	// delete pods.
	// +optional
	// +kubebuilder:default=Report
	Action ExecFormatErrorAction `json:"action,omitempty"`

	// deleteInterval is the shortest time between two deletions for one owner with action
	// DeletePod (at least 1m), so that a pod whose recreation fails the same way is not deleted
	// in a loop. 10m when unset.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="deleteInterval must be at least 1m"
	DeleteInterval *metav1.Duration `json:"deleteInterval,omitempty"`
}

// ExecFormatErrorAction is what the exec-format-error monitor does to a pod it reports.
// +kubebuilder:validation:Enum=Report;DeletePod
type ExecFormatErrorAction string

// Actions of the exec-format-error monitor.
const (
	ExecFormatErrorActionReport    ExecFormatErrorAction = "Report"
	ExecFormatErrorActionDeletePod ExecFormatErrorAction = "DeletePod"
)

// DefaultExecFormatErrorDeleteInterval is deleteInterval when unset.
const DefaultExecFormatErrorDeleteInterval = 10 * time.Minute

// ExecFormatErrorDeleteInterval returns the interval between two deletions for one owner when
// the monitor deletes the pods it reports (action DeletePod on an enabled monitor), zero when it
// only reports them.
func (p *Plugins) ExecFormatErrorDeleteInterval() time.Duration {
	if !p.ExecFormatErrorMonitorEnabled() || p.ExecFormatErrorMonitor.Action != ExecFormatErrorActionDeletePod {
		return 0
	}
	if d := p.ExecFormatErrorMonitor.DeleteInterval; d != nil {
		return d.Duration
	}
	return DefaultExecFormatErrorDeleteInterval
}

// NodeAffinityScoring configures the preferred per-architecture node affinity weights.
// +kubebuilder:validation:XValidation:rule="!self.enabled || (has(self.platforms) && size(self.platforms) > 0)",message="platforms must not be empty when nodeAffinityScoring is enabled"
type NodeAffinityScoring struct {
	// enabled turns the plugin on. A disabled plugin is ignored.
	// +required
	Enabled bool `json:"enabled"`

	// platforms lists one weight per architecture. Each architecture may appear once.
	// A term is only added for architectures that every image of the pod supports. The weights of
	// one configuration apply as a whole: a configuration is skipped when the pod already has
	// preferred kubernetes.io/arch terms, its own or those of a higher-priority configuration.
	// +optional
	// +listType=map
	// +listMapKey=architecture
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(q, q.architecture == p.architecture))",message="each architecture may appear only once in platforms"
	Platforms []NodeAffinityScoringPlatformTerm `json:"platforms,omitempty"`
}

// NodeAffinityScoringPlatformTerm is the weight given to the nodes of one architecture.
type NodeAffinityScoringPlatformTerm struct {
	// architecture is the value of the kubernetes.io/arch node label that the term weights.
	// +required
	// +kubebuilder:validation:Enum=amd64;arm64;ppc64le;s390x
	Architecture string `json:"architecture"`

	// weight is added to the score of the nodes of this architecture, in the range 1-100,
	// as in a PreferredSchedulingTerm.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`
}

// NodeAffinityScoringEnabled reports whether the nodeAffinityScoring plugin is set and enabled.
func (p *Plugins) NodeAffinityScoringEnabled() bool {
	return p != nil && p.NodeAffinityScoring != nil && p.NodeAffinityScoring.Enabled
}

// ExecFormatErrorMonitorEnabled reports whether the execFormatErrorMonitor plugin is set and
// enabled.
func (p *Plugins) ExecFormatErrorMonitorEnabled() bool {
	return p != nil && p.ExecFormatErrorMonitor != nil && p.ExecFormatErrorMonitor.Enabled
}
