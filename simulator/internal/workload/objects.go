package workload

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Labels the simulator puts on every pod it creates, so that its watch sees
// only its own pods.
const (
	// LabelRun carries the run's id.
	LabelRun = "sim.archgate.io/run"
	// LabelPass carries the pass name (main, baseline).
	LabelPass = "sim.archgate.io/pass"
)

// PaddingAnnotation carries an attack pod's padding (AnnotationBytes).
const PaddingAnnotation = "sim.archgate.io/padding"

// AnswerAnnotation carries, on a pod created with ObjectOptions.HandwrittenAnswer, the
// architectures its handwritten affinity requires, comma-separated (empty: its images share
// none), for the simulator's floor policy to turn into that affinity at admission.
const AnswerAnnotation = "sim.archgate.io/architectures"

// PullSecretName is the imagePullSecret the simulator creates in every
// workload namespace when the registry has auth.
const PullSecretName = "sim-registry-pull"

// podNamePrefix starts every pod name; the rest is the pod index.
const podNamePrefix = "p-"

// PodName names pod index i.
func PodName(i int) string { return fmt.Sprintf("%s%05d", podNamePrefix, i) }

// PodIndex parses the index out of a pod name; ok is false for other names.
func PodIndex(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, podNamePrefix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0
}

// ObjectOptions say how planned pods become API objects.
type ObjectOptions struct {
	// Host is the registry host[:port] prefixed to every image reference.
	Host string
	// HangHost is the host[:port] of the attacker's images that never
	// answer (scenario.AttackImagesHang).
	HangHost string
	// Namespaces are the namespace names, by index.
	Namespaces []string
	// Labels are added to every pod (run and pass).
	Labels map[string]string
	// CPU and Memory are each container's requests.
	CPU, Memory resource.Quantity
	// HandwrittenAffinity gives every pod that does not pin its architecture
	// itself the required affinity its images need, as a user would write it.
	HandwrittenAffinity bool
	// HandwrittenAnswer, instead of HandwrittenAffinity, gives every pod that
	// HandwrittenAffinity would give an affinity that affinity's architectures in
	// AnswerAnnotation.
	HandwrittenAnswer bool
	// HandwrittenPreferences, with HandwrittenAffinity, adds to a pod the preferred terms
	// archgate adds to a pod whose images run on compatible (the cluster's
	// nodeAffinityScoring weights), so that what is written by hand is everything archgate
	// writes. Nil adds none.
	HandwrittenPreferences func(pod *corev1.Pod, compatible []string)
	// Adjust, when set, changes each pod last (a run against an existing
	// cluster confines its pods to its own nodes).
	Adjust func(*corev1.Pod)
}

// Object builds the pod as the simulator creates it.
func (p Pod) Object(o ObjectOptions) *corev1.Pod {
	requests := corev1.ResourceList{corev1.ResourceCPU: o.CPU, corev1.ResourceMemory: o.Memory}
	host := o.Host
	if p.Attack == scenario.AttackImagesHang {
		host = o.HangHost
	}
	container := func(prefix string, i int, ref string) corev1.Container {
		return corev1.Container{
			Name:      fmt.Sprintf("%s%d", prefix, i),
			Image:     host + "/" + ref,
			Resources: corev1.ResourceRequirements{Requests: requests},
		}
	}
	labels := make(map[string]string, len(o.Labels))
	for k, v := range o.Labels {
		labels[k] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      PodName(p.Index),
			Namespace: o.Namespaces[p.Namespace],
			Labels:    labels,
		},
	}
	for i, ref := range p.InitContainers {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, container("init", i, ref))
	}
	for i, ref := range p.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, container("app", i, ref))
	}
	switch {
	case p.ArchAffinity != "":
		pod.Spec.Affinity = requiredArch(corev1.NodeSelectorOpIn, p.ArchAffinity)
	case o.HandwrittenAffinity:
		pod.Spec.Affinity = p.HandwrittenAffinity()
	}
	if p.NodeSelectorArch != "" {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: p.NodeSelectorArch}
	}
	// archgate weights the architectures of every pod it places, pinned by the user's own
	// affinity or not; a pod whose nodeSelector pins the architecture it leaves alone.
	if o.HandwrittenAffinity && o.HandwrittenPreferences != nil && p.NodeSelectorArch == "" && !p.AnyArch {
		o.HandwrittenPreferences(pod, p.Allowed)
	}
	if o.HandwrittenAnswer && p.HandwrittenAffinity() != nil {
		setAnnotation(pod, AnswerAnnotation, strings.Join(p.Allowed, ","))
	}
	if p.AnnotationBytes > 0 {
		setAnnotation(pod, PaddingAnnotation, strings.Repeat("x", p.AnnotationBytes))
	}
	if p.PullSecret {
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: PullSecretName}}
	}
	if o.Adjust != nil {
		o.Adjust(pod)
	}
	return pod
}

// setAnnotation sets the pod's annotation key to value.
func setAnnotation(pod *corev1.Pod, key, value string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = value
}

// HandwrittenAffinity is the affinity a careful user adds to the pod by hand:
// none when the pod pins its architecture itself or its images run
// anywhere, else handwrittenAffinity of its allowed architectures.
func (p Pod) HandwrittenAffinity() *corev1.Affinity {
	if p.ArchAffinity != "" || p.NodeSelectorArch != "" || p.AnyArch {
		return nil
	}
	return handwrittenAffinity(p.Allowed)
}

// handwrittenAffinity is the required affinity a user writes for images that
// run on allowed: In those architectures, or, when they share none, a term no
// node matches (every node carries the architecture label), so that the pod
// stays Pending as it does with the operator.
func handwrittenAffinity(allowed []string) *corev1.Affinity {
	if len(allowed) == 0 {
		return requiredArch(corev1.NodeSelectorOpDoesNotExist)
	}
	return requiredArch(corev1.NodeSelectorOpIn, allowed...)
}

// requiredArch is a required node affinity on the architecture label.
func requiredArch(op corev1.NodeSelectorOperator, values ...string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelArchStable, Operator: op, Values: values,
			}}}},
		},
	}}
}
