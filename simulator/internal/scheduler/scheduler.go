// Package scheduler runs the real kube-scheduler (k8s.io/kubernetes/pkg/
// scheduler) in-process against an apiserver, with its default profile, the
// way the upstream scheduler_perf harness does.
package scheduler

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedconfigv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// Options tunes the embedded scheduler. The zero value runs the defaults of
// a real kube-scheduler.
type Options struct {
	// PercentageOfNodesToScore overrides the scheduler's adaptive default
	// when non-zero.
	PercentageOfNodesToScore int32
	// DisableEvents skips the scheduler's per-pod Events. A real scheduler
	// writes them; turning them off measures the placement path alone.
	DisableEvents bool
}

// Scheduler is a running embedded kube-scheduler.
type Scheduler struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// DefaultConfiguration returns the kube-scheduler component configuration
// with every default applied, as the real binary would load it from an
// empty file.
func DefaultConfiguration() (*schedconfig.KubeSchedulerConfiguration, error) {
	gvk := schedconfigv1.SchemeGroupVersion.WithKind("KubeSchedulerConfiguration")
	cfg := &schedconfig.KubeSchedulerConfiguration{}
	if _, _, err := schedscheme.Codecs.UniversalDecoder().Decode(nil, &gvk, cfg); err != nil {
		return nil, fmt.Errorf("defaulting scheduler configuration: %w", err)
	}
	return cfg, nil
}

// Start creates the scheduler, waits for its informers to sync and runs it
// until ctx is cancelled or Stop is called.
func Start(ctx context.Context, restConfig *rest.Config, opts Options) (*Scheduler, error) {
	cfg, err := DefaultConfiguration()
	if err != nil {
		return nil, err
	}
	// As kube-scheduler's createKubeConfig does: the component config's
	// content types (protobuf by default); rate limits stay the caller's.
	restConfig = rest.CopyConfig(restConfig)
	restConfig.ContentType = cfg.ClientConnection.ContentType
	restConfig.AcceptContentTypes = cfg.ClientConnection.AcceptContentTypes
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating scheduler client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	recorders, stopEvents := newRecorderFactory(ctx, client, opts.DisableEvents)

	percentage := cfg.PercentageOfNodesToScore
	if opts.PercentageOfNodesToScore != 0 {
		percentage = &opts.PercentageOfNodesToScore
	}
	informers := scheduler.NewInformerFactory(client, 0, nil)
	sched, err := scheduler.New(ctx, client, informers, nil, recorders,
		scheduler.WithKubeConfig(restConfig),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(percentage),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithParallelism(cfg.Parallelism),
	)
	if err != nil {
		cancel()
		stopEvents()
		return nil, fmt.Errorf("creating scheduler: %w", err)
	}
	informers.Start(ctx.Done())
	informers.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		cancel()
		stopEvents()
		return nil, fmt.Errorf("waiting for scheduler handlers: %w", err)
	}
	s := &Scheduler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer stopEvents()
		defer informers.Shutdown()
		sched.Run(ctx)
	}()
	return s, nil
}

// Stop stops the scheduler and waits until its loop has returned.
func (s *Scheduler) Stop() {
	s.cancel()
	<-s.done
}

func newRecorderFactory(ctx context.Context, client kubernetes.Interface, disabled bool) (profile.RecorderFactory, func()) {
	if disabled {
		// A FakeRecorder without a channel drops every event.
		return func(string) events.EventRecorderLogger { return &events.FakeRecorder{} }, func() {}
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	return profile.NewRecorderFactory(broadcaster), broadcaster.Shutdown
}
