package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExecFormatErrorStatus checks the status the fake kubelet writes: every
// container crash-looping with runc's report in its last state, exit code 1,
// and that the recorder's test recognises it and nothing else.
func TestExecFormatErrorStatus(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x"}, {Name: "b", Image: "y"}}}}
	if ReportsExecFormatError(pod) {
		t.Fatal("a pod without status reports an exec format error")
	}
	pod.Status = ExecFormatErrorStatus(pod)
	if len(pod.Status.ContainerStatuses) != 2 {
		t.Fatalf("%d container statuses, want 2", len(pod.Status.ContainerStatuses))
	}
	for _, s := range pod.Status.ContainerStatuses {
		term := s.LastTerminationState.Terminated
		if s.State.Waiting == nil || s.State.Waiting.Reason != "CrashLoopBackOff" || term == nil || term.ExitCode != 1 ||
			term.Reason != "Error" || term.Message != ExecFormatMessage+"\n" {
			t.Errorf("container %s status %+v", s.Name, s)
		}
	}
	if !ReportsExecFormatError(pod) {
		t.Error("the kubelet's own status is not recognised")
	}
	pod.Status.ContainerStatuses[0].LastTerminationState.Terminated.Message = "panic: boom"
	pod.Status.ContainerStatuses[1].LastTerminationState.Terminated.Message = "panic: boom"
	if ReportsExecFormatError(pod) {
		t.Error("another crash is recognised as an exec format error")
	}
}
