//go:build integration

package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/archgate/archgate/operator/pkg/testing/objects"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/simulator/internal/fakenodes"
	"github.com/archgate/archgate/simulator/internal/scheduler"
)

const gateName = "multiarch.openshift.io/scheduling-gate"

// client talks to the package's control plane, which runs the embedded
// scheduler for every test.
var client kubernetes.Interface

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sched, err := scheduler.Start(ctx, env.Config, scheduler.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sched.Stop()
	client = kubernetes.NewForConfigOrDie(env.Config)
	return m.Run()
}

func TestGatedPodWaitsThenBindsToRequiredArch(t *testing.T) {
	ctx := t.Context()
	var pools []fakenodes.NodePool
	for _, arch := range []string{"amd64", "arm64", "ppc64le", "s390x"} {
		pools = append(pools, fakenodes.DefaultPool("it-"+arch, arch, 2))
	}
	if err := fakenodes.CreateNodes(ctx, client, pools, 8); err != nil {
		t.Fatal(err)
	}
	ns := createNamespace(t, "gated")
	pod, err := client.CoreV1().Pods(ns).Create(ctx, gatedPod(ns, "web", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	waitForPod(t, ns, pod.Name, "reports SchedulingGated", func(p *corev1.Pod) bool {
		c := podScheduledCondition(p)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonSchedulingGated
	})
	if got, _ := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{}); got.Spec.NodeName != "" {
		t.Fatalf("gated pod was bound to %s", got.Spec.NodeName)
	}

	// What the placement controller does: set the arch requirement and drop
	// the gate in one update (KEP-3838 allows it while the pod is gated).
	pod, err = client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.Affinity = archAffinity("s390x")
	pod.Spec.SchedulingGates = nil
	if _, err := client.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	bound := waitForPod(t, ns, pod.Name, "is bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	node, err := client.CoreV1().Nodes().Get(ctx, bound.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Labels[fakenodes.ArchLabel]; got != "s390x" {
		t.Errorf("pod bound to node %s of arch %q, want s390x", node.Name, got)
	}
}

// gatedPod is a pod held by gateName, as a gating webhook would leave it.
func gatedPod(ns, name string, affinity *corev1.Affinity) *corev1.Pod {
	return objects.Pod(ns, name).WithSchedulingGates(gateName).WithAffinity(affinity).WithImage("registry.example/app:1").Build()
}

func archAffinity(arch string, extra ...corev1.NodeSelectorRequirement) *corev1.Affinity {
	exprs := append([]corev1.NodeSelectorRequirement{{
		Key: fakenodes.ArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{arch},
	}}, extra...)
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: exprs}},
		},
	}}
}

func podScheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func createNamespace(tb testing.TB, prefix string) string {
	tb.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return ns.Name
}

// waitForPod polls, with a bound, until cond holds for the pod.
func waitForPod(tb testing.TB, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	tb.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = p
			return cond(p), nil
		})
	if err != nil {
		tb.Fatalf("pod %s/%s never %s: %v; last status %+v", ns, name, what, err, last.Status)
	}
	return last
}
