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

// Package execformatmonitor is the exec-format-error monitor (the execFormatErrorMonitor plugin): it
// watches every pod of the cluster through a cache that keeps only what detection needs, and
// reports each pod whose container failed with an exec format error once: the label
// multiarch.openshift.io/exec-format-error=true, then a Warning Event, and a metric by
// namespace and node architecture. With the action DeletePod it then deletes the pod when its
// owner recreates it elsewhere (deletion.go).
//
// It runs in the pod placement controller's process, as the leader: the controller already
// has the pod access it needs and a leader election, and one writer per cluster is what makes
// "once per pod" hold without coordination. Its pod cache is separate from the controller's
// cache of gated pods and, added to the manager as a plain runnable, runs on the leader only:
// a standby pays neither the memory nor the watch, and a new leader lists every pod before it
// reports (the label tells it which pods were reported already).
package execformatmonitor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/execformat"
)

// Names of the monitor's controller, Event reporter, Event reason and action.
const (
	ControllerName    = "exec-format-error-monitor"
	EventRecorderName = "archgate-exec-format-error-monitor"
	// ReasonExecFormatError is the reason of the Warning Event recorded on a detected pod.
	ReasonExecFormatError = "ExecFormatError"
	// ReasonPodDeleted is the reason of the Warning Event recorded on the owner of a pod the
	// monitor deleted (action DeletePod).
	ReasonPodDeleted = "ExecFormatErrorPodDeleted"
	eventAction      = "DetectExecFormatError"
	// workers bounds the reports in flight: each is one patch and one Event, and a webhook
	// outage can misplace pods by the hundred within seconds.
	workers = 4
	// maxNoteLen is the longest Event note the apiserver accepts (events.k8s.io: under 1 kB).
	maxNoteLen = 1000
	// unknownArchitecture labels the metric when the node or its kubernetes.io/arch label is gone.
	unknownArchitecture = "unknown"
)

// MetricPodsDetected counts the pods reported, by LabelNamespace and LabelArchitecture (the
// architecture of the node the pod failed on).
const (
	MetricPodsDetected = "archgate_exec_format_error_pods_total"
	LabelNamespace     = "namespace"
	LabelArchitecture  = "architecture"
)

// labelPatch adds the label; a merge patch of one label cannot conflict with anything else.
var labelPatch = []byte(`{"metadata":{"labels":{"` + v1beta1.LabelExecFormatError + `":"` + v1beta1.LabelValueTrue + `"}}}`)

// MetricPodsDeleted counts the pods deleted with the action DeletePod, by LabelNamespace and
// LabelResult (deleted, or skipped because the owner's last deletion is within the interval).
const (
	MetricPodsDeleted = "archgate_exec_format_error_pod_deletions_total"
	LabelResult       = "result"
)

// Metrics are the monitor's metrics.
type Metrics struct {
	detected  *prometheus.CounterVec
	deletions *prometheus.CounterVec
}

// NewMetrics returns unregistered metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		detected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPodsDetected,
			Help: "Pods reported because a container failed with an exec format error, by namespace and by the architecture of the node it failed on.",
		}, []string{LabelNamespace, LabelArchitecture}),
		deletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPodsDeleted,
			Help: "Reported pods the monitor deleted for their owner to recreate (action DeletePod), by namespace and result " +
				"(deleted; skipped: the owner had a pod deleted within deleteInterval).",
		}, []string{LabelNamespace, LabelResult}),
	}
}

// Collectors returns every collector, for callers that register them with their own policy.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.detected, m.deletions}
}

// Options configure the monitor.
type Options struct {
	// Metrics receives the monitor's metrics; fresh, unregistered ones when nil.
	Metrics *Metrics
	// DeleteInterval, when positive, makes the monitor delete each pod it reports whose owner
	// recreates it, at most once per owner per interval (action DeletePod).
	DeleteInterval time.Duration
}

// Monitor is the exec-format-error monitor's reconciler.
type Monitor struct {
	metrics  *Metrics
	pods     client.Reader // the monitor's own cache of pod views
	nodes    client.Reader // node metadata
	client   client.Client
	recorder events.EventRecorder
	// deletions is nil unless the monitor deletes the pods it reports.
	deletions *deletions
}

var _ reconcile.Reconciler = (*Monitor)(nil)

// SetupWithManager registers the monitor with mgr: its own cache of every pod, reduced by
// monitorView, added to mgr (leader only); the controller, enqueuing only pods to report; node labels read
// as metadata only through mgr's client.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	pods, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: transformPod}},
	})
	if err != nil {
		return fmt.Errorf("creating the %s cache: %w", ControllerName, err)
	}
	if err := mgr.Add(pods); err != nil {
		return fmt.Errorf("adding the %s cache: %w", ControllerName, err)
	}
	m := &Monitor{metrics: opts.Metrics, pods: pods, nodes: mgr.GetClient(), client: mgr.GetClient(),
		recorder: mgr.GetEventRecorder(EventRecorderName)}
	if opts.DeleteInterval > 0 {
		m.deletions = newDeletions(opts.DeleteInterval)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(pods, &corev1.Pod{}, &handler.TypedEnqueueRequestForObject[*corev1.Pod]{},
			predicate.NewTypedPredicateFuncs(needsReport))).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(m)
}

// Reconcile reports the pod if it shows an exec format error and was not reported yet: label
// first, then the Event and the metric, so that a failure in between loses an Event rather
// than repeating one.
func (m *Monitor) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := m.pods.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !needsReport(pod) {
		return reconcile.Result{}, nil
	}
	finding, _ := execformat.FirstFinding(&pod.Status)
	arch := m.nodeArchitecture(ctx, pod.Spec.NodeName)
	if err := m.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, labelPatch)); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("labelling pod %s: %w", req.NamespacedName, err)
	}
	m.metrics.detected.WithLabelValues(pod.Namespace, arch).Inc()
	m.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonExecFormatError, eventAction, "%s", EventNote(finding, pod.Spec.NodeName, arch))
	ctrl.LoggerFrom(ctx).Info("Container failed with an exec format error", "container", finding.Container,
		"node", pod.Spec.NodeName, "architecture", arch)
	if m.deletions != nil {
		m.deleteForOwner(ctx, pod, arch)
	}
	return reconcile.Result{}, nil
}

// nodeArchitecture returns the node's kubernetes.io/arch label, unknownArchitecture when the
// pod is unbound or the node or its label cannot be read.
func (m *Monitor) nodeArchitecture(ctx context.Context, nodeName string) string {
	if nodeName == "" {
		return unknownArchitecture
	}
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := m.nodes.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
		return unknownArchitecture
	}
	if a := node.Labels[v1beta1.NodeArchLabel]; a != "" {
		return a
	}
	return unknownArchitecture
}

// EventNote is the text of the Warning Event: the container, the node and its architecture,
// and the runtime's report, on one line and within the apiserver's limit.
func EventNote(f execformat.Finding, node, arch string) string {
	kind := "Container"
	if f.Init {
		kind = "Init container"
	}
	report := strings.Join(strings.Fields(f.Message), " ")
	note := fmt.Sprintf("%s %q failed with an exec format error on node %s (%s): its image has no binary for this architecture. %s: %s",
		kind, f.Container, node, arch, f.Reason, report)
	if len(note) > maxNoteLen {
		// Cut on a byte count, then drop a rune the cut split.
		note = strings.ToValidUTF8(note[:maxNoteLen-3], "") + "..."
	}
	return note
}
