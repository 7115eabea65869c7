package fakenodes

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
	"k8s.io/utils/ptr"
)

// ExecFormatMessage is what runc ≥ 1.1 prints to the container's stderr when
// the kernel refuses the entrypoint (ENOEXEC); the kubelet copies it into the
// terminated state's message for terminationMessagePolicy
// FallbackToLogsOnError.
const ExecFormatMessage = "exec /app: exec format error"

// kubeletWorkers bounds the status writes in flight.
const kubeletWorkers = 8

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

// RunningStatus is the status a kubelet writes once a pod's containers run:
// phase Running, Ready, each container running.
func RunningStatus(pod *corev1.Pod) corev1.PodStatus {
	now := metav1.Now()
	st := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, Conditions: []corev1.PodCondition{
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
			Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	return st
}

// KubeletOptions say what the fake nodes' kubelets report.
type KubeletOptions struct {
	// Misplaced says whether the pod cannot run on its node; such a pod gets
	// ExecFormatErrorStatus when ExecFormatErrors is set.
	Misplaced        func(*corev1.Pod) bool
	ExecFormatErrors bool
	// RunPods gives every other bound pod RunningStatus, as the kubelet of a
	// real node (or kwok's pod-ready stage) does.
	RunPods bool
}

// Kubelet plays the kubelets of the fake nodes: once per pod bound to one,
// it writes the status a real kubelet would after the first start, an exec
// format error (ExecFormatErrorStatus) for a pod whose images lack the
// node's architecture, a running pod (RunningStatus) otherwise, as its
// options ask.
type Kubelet struct {
	ctx     context.Context
	client  kubernetes.Interface
	opts    KubeletOptions
	queue   chan *corev1.Pod
	written atomic.Int64 // exec-format-error statuses
	running atomic.Int64
	failed  atomic.Int64
	mu      sync.Mutex
	done    map[string]bool // namespace/name of the pods queued
	wg      sync.WaitGroup
}

// StartKubelet watches the pods selected by selector until ctx is done; Wait
// returns the number of exec-format-error statuses written and of writes that
// failed, Running the number of running statuses written.
func StartKubelet(ctx context.Context, client kubernetes.Interface, selector string, opts KubeletOptions) *Kubelet {
	k := &Kubelet{ctx: ctx, client: client, opts: opts, queue: make(chan *corev1.Pod, 1<<16), done: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := factory.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.observe,
		UpdateFunc: func(_, obj any) { k.observe(obj) },
	})
	for range kubeletWorkers {
		k.wg.Go(func() { k.work(ctx) })
	}
	factory.Start(ctx.Done())
	k.wg.Go(func() { <-ctx.Done(); factory.Shutdown() })
	return k
}

func (k *Kubelet) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodRunning || k.status(pod) == nil {
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

// status is what the kubelet writes for pod, nil for nothing.
func (k *Kubelet) status(pod *corev1.Pod) func(*corev1.Pod) corev1.PodStatus {
	switch {
	case k.opts.Misplaced(pod):
		if k.opts.ExecFormatErrors {
			return ExecFormatErrorStatus
		}
		return nil
	case k.opts.RunPods:
		return RunningStatus
	}
	return nil
}

func (k *Kubelet) work(ctx context.Context) {
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

// report writes the status, from the pod as the watch delivered it (one
// request, as a kubelet's status manager does), rereading it on a conflict.
func (k *Kubelet) report(ctx context.Context, pod *corev1.Pod) error {
	pods := k.client.CoreV1().Pods(pod.Namespace)
	status := k.status(pod)
	current := pod.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current.Status = status(current)
		_, err := pods.UpdateStatus(ctx, current, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := pods.Get(ctx, pod.Name, metav1.GetOptions{}); gerr == nil {
				current = fresh
			}
		}
		return err
	})
	switch {
	case err != nil:
	case k.opts.Misplaced(pod):
		k.written.Add(1)
	default:
		k.running.Add(1)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Wait waits for the kubelet to stop (its context done) and returns the
// exec-format-error statuses written and the writes that failed.
func (k *Kubelet) Wait() (written, failed int64) {
	k.wg.Wait()
	return k.written.Load(), k.failed.Load()
}

// Running returns the running statuses written so far.
func (k *Kubelet) Running() int64 { return k.running.Load() }
