package existing

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/archgate/archgate/simulator/internal/fakenodes"
)

// KwokNode is node index of pool as the run creates it in an existing cluster: the envtest
// run's node, annotated for the cluster's kwok (which makes it Ready, renews its lease and runs
// the pods bound to it), tainted so that only the run's pods land on it, and labelled with the
// run. Its status carries the capacity but no conditions: Ready comes from kwok, so that a
// cluster without kwok shows as nodes that never turn Ready, not as nodes that lie.
func KwokNode(pool fakenodes.NodePool, index int, runID string) *corev1.Node {
	n := pool.Node(index)
	n.Annotations = map[string]string{KwokAnnotation: KwokValue}
	n.Labels[RunLabel] = runID
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: KwokAnnotation, Value: KwokValue, Effect: corev1.TaintEffectNoSchedule})
	n.Status.Conditions = nil
	n.Status.Phase = ""
	return n
}

// IsReady reports whether node's Ready condition is True.
func IsReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// IsKwok reports whether node is one a kwok keeps (annotated kwok.x-k8s.io/node=fake).
func IsKwok(node *corev1.Node) bool { return node.Annotations[KwokAnnotation] == KwokValue }

// kwokWait bounds the wait for the cluster's kwok to make the run's nodes Ready.
const kwokWait = 2 * time.Minute

// WaitReady waits until the run's want nodes are Ready, polling; it fails naming a node that is
// not after kwokWait (no kwok manages nodes with the annotation, or it is overloaded).
func WaitReady(ctx context.Context, c kubernetes.Interface, runID string, want int) error {
	deadline := time.Now().Add(kwokWait)
	for {
		list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: RunLabel + "=" + runID})
		if err == nil {
			ready, notReady := 0, ""
			for i := range list.Items {
				if IsReady(&list.Items[i]) {
					ready++
				} else if notReady == "" {
					notReady = list.Items[i].Name
				}
			}
			if ready == want {
				return nil
			}
			err = fmt.Errorf("%d of %d nodes Ready (node %s is not)", ready, want, notReady)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the run's kwok nodes did not turn Ready within %s: %w; does a kwok manage nodes annotated %s=%s in this cluster?",
				kwokWait, err, KwokAnnotation, KwokValue)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}
