// Package existing holds what a run against an existing cluster (simulator run --kubeconfig)
// needs besides the envtest run: pods confined to the run's kwok nodes, the kwok nodes
// themselves, the scenario features such a run refuses, the report's cluster block and the
// clean-up of everything the run created (also after a killed run: simulator cleanup).
package existing

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/archgate/archgate/simulator/internal/workload"
)

// Kwok's node annotation (nodes carrying it are the cluster's kwok's to keep alive) and the
// NoSchedule taint the run's nodes carry, so that only the run's pods (which tolerate it) land
// there; the real-node cluster's kwok nodes carry the same (hack/cluster.sh).
const (
	KwokAnnotation = "kwok.x-k8s.io/node"
	KwokValue      = "fake"
)

// RunLabel is the label every object the run creates carries, valued with the run's id: the
// nodes and namespaces, and the pods' required node-affinity term.
const RunLabel = workload.LabelRun

// Confine keeps pod on the run's nodes and off every other node of the cluster: it tolerates
// the kwok taint, and every required node-affinity term gets RunLabel In [runID] (a pod without
// required terms gets one term with only that requirement). Terms are ORed, so the requirement
// goes into each; archgate ANDs its architecture requirement into each term as well, so the
// placement it decides is unchanged. The run label is not an architecture pin.
func Confine(pod *corev1.Pod, runID string) {
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
		Key: KwokAnnotation, Operator: corev1.TolerationOpEqual, Value: KwokValue, Effect: corev1.TaintEffectNoSchedule,
	})
	onRun := corev1.NodeSelectorRequirement{Key: RunLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{runID}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{onRun}}},
		}
		return
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, onRun)
	}
}
