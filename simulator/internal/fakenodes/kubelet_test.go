package fakenodes

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
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

// TestKubeletReportsWhatItsOptionsSay: each bound pod gets one status, the
// exec-format error for a misplaced pod when asked, running for the others
// with RunPods; unbound pods and misplaced pods without ExecFormatErrors get
// none.
func TestKubeletReportsWhatItsOptionsSay(t *testing.T) {
	bound := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"run": "x"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	}
	for _, tc := range []struct {
		name        string
		opts        KubeletOptions
		wantPhase   map[string]corev1.PodPhase // pod → phase written ("" none)
		wantRunning int64
		wantExec    int64
	}{
		{name: "run pods only", opts: KubeletOptions{RunPods: true},
			wantPhase: map[string]corev1.PodPhase{"ok": corev1.PodRunning, "wrong": "", "pending": ""}, wantRunning: 1},
		{name: "exec format errors only", opts: KubeletOptions{ExecFormatErrors: true},
			wantPhase: map[string]corev1.PodPhase{"ok": "", "wrong": corev1.PodRunning, "pending": ""}, wantExec: 1},
		{name: "both", opts: KubeletOptions{ExecFormatErrors: true, RunPods: true},
			wantPhase: map[string]corev1.PodPhase{"ok": corev1.PodRunning, "wrong": corev1.PodRunning, "pending": ""}, wantRunning: 1, wantExec: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(bound("ok", "n-arm"), bound("wrong", "n-amd"), bound("pending", ""))
			ctx, cancel := context.WithCancel(t.Context())
			tc.opts.Misplaced = func(p *corev1.Pod) bool { return p.Name == "wrong" }
			k := StartKubelet(ctx, client, "run=x", tc.opts)
			_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return k.Running()+k.written.Load() >= tc.wantRunning+tc.wantExec, nil
			})
			cancel()
			written, failed := k.Wait()
			if written != tc.wantExec || k.Running() != tc.wantRunning || failed != 0 {
				t.Errorf("exec-format %d, running %d, failed %d; want %d, %d, 0", written, k.Running(), failed, tc.wantExec, tc.wantRunning)
			}
			for name, want := range tc.wantPhase {
				p, err := client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if p.Status.Phase != want {
					t.Errorf("pod %s phase %q, want %q", name, p.Status.Phase, want)
				}
				if name == "wrong" && want != "" && !ReportsExecFormatError(p) {
					t.Errorf("pod %s: no exec format error in %+v", name, p.Status)
				}
			}
		})
	}
}
