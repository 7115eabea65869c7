package cluster

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// ExecFormatMessage is what runc ≥ 1.1 prints to the container's stderr when
// the kernel refuses the entrypoint (ENOEXEC); the kubelet copies it into the
// terminated state's message for terminationMessagePolicy
// FallbackToLogsOnError.
const ExecFormatMessage = "exec /app: exec format error"

// execFormatWorkers bounds the status writes in flight.
const execFormatWorkers = 8

// ExecFormatErrorStatus is the status the kubelet writes for a pod whose
// containers cannot run on the node's CPU: each container crash-loops, its
// last run ended with exit code 1 and ExecFormatMessage.
func ExecFormatErrorStatus(pod *corev1.Pod) corev1.PodStatus {
	st := corev1.PodStatus{Phase: corev1.PodRunning}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, RestartCount: 1,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: "back-off 10s restarting failed container=" + c.Name + " pod=" + pod.Name + "_" + pod.Namespace}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: "Error", ExitCode: 1, Message: ExecFormatMessage + "\n"}},
		})
	}
	return st
}

// ReportsExecFormatError reports whether the pod's status is the one
// ExecFormatErrorStatus writes.
func ReportsExecFormatError(pod *corev1.Pod) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if t := s.LastTerminationState.Terminated; t != nil && strings.Contains(t.Message, ExecFormatMessage) {
			return true
		}
	}
	return false
}

// ExecFormatKubelet plays the kubelets of the fake nodes for one thing: a pod
// bound to a node whose architecture one of its images lacks gets the status
// a real kubelet would write after the first failed start (see
// ExecFormatErrorStatus), once.
type ExecFormatKubelet struct {
	ctx    context.Context
	client kubernetes.Interface
	// misplaced says whether the pod cannot run on its node.
	misplaced func(*corev1.Pod) bool
	queue     chan *corev1.Pod
	written   atomic.Int64
	failed    atomic.Int64
	mu        sync.Mutex
	done      map[string]bool // namespace/name of the pods queued
	wg        sync.WaitGroup
}

// StartExecFormatKubelet watches the pods selected by selector until ctx is
// done; Wait returns the number of statuses written and failed.
func StartExecFormatKubelet(ctx context.Context, client kubernetes.Interface, selector string, misplaced func(*corev1.Pod) bool) *ExecFormatKubelet {
	k := &ExecFormatKubelet{ctx: ctx, client: client, misplaced: misplaced, queue: make(chan *corev1.Pod, 1<<16), done: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := factory.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.observe,
		UpdateFunc: func(_, obj any) { k.observe(obj) },
	})
	for range execFormatWorkers {
		k.wg.Go(func() { k.work(ctx) })
	}
	factory.Start(ctx.Done())
	k.wg.Go(func() { <-ctx.Done(); factory.Shutdown() })
	return k
}

func (k *ExecFormatKubelet) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" || ReportsExecFormatError(pod) || !k.misplaced(pod) {
		return
	}
	key := pod.Namespace + "/" + pod.Name
	k.mu.Lock()
	seen := k.done[key]
	k.done[key] = true
	k.mu.Unlock()
	if seen {
		return
	}
	select { // the queue holds every pod of a run; the select only lets a stopped kubelet go
	case k.queue <- pod:
	case <-k.ctx.Done():
	}
}

func (k *ExecFormatKubelet) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case pod := <-k.queue:
			if err := k.report(ctx, pod); err != nil && ctx.Err() == nil {
				k.failed.Add(1)
			}
		}
	}
}

// report writes the status, rereading the pod on a conflict.
func (k *ExecFormatKubelet) report(ctx context.Context, pod *corev1.Pod) error {
	pods := k.client.CoreV1().Pods(pod.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status = ExecFormatErrorStatus(current)
		_, err = pods.UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err == nil {
		k.written.Add(1)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Wait waits for the kubelet to stop (its context done) and returns the
// statuses written and the writes that failed.
func (k *ExecFormatKubelet) Wait() (written, failed int64) {
	k.wg.Wait()
	return k.written.Load(), k.failed.Load()
}
