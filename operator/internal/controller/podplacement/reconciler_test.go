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

package podplacement

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

const testNamespace = "team"

// answer is what the fake inspector returns for one call.
type answer struct {
	archs   []string
	any     bool
	reason  inspect.Reason // set: fail with this reason
	observe func(creds credentials.Candidates)
}

func ok(archs ...string) answer { return answer{archs: archs} }

func fail(r inspect.Reason) answer { return answer{reason: r} }

// fakeInspector answers from per-image scripts; the last answer repeats.
type fakeInspector struct {
	mu      sync.Mutex
	scripts map[string][]answer
	calls   map[string]int
}

func (f *fakeInspector) Architectures(_ context.Context, image string, creds credentials.Candidates) (inspect.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	script, found := f.scripts[image]
	if !found {
		return inspect.Result{}, &inspect.Error{Image: image, Reason: inspect.ReasonNotFound, Err: errors.New("no script")}
	}
	n := f.calls[image]
	f.calls[image] = n + 1
	a := script[min(n, len(script)-1)]
	if a.observe != nil {
		a.observe(creds)
	}
	if a.reason != "" {
		return inspect.Result{}, &inspect.Error{Image: image, Reason: a.reason, Err: fmt.Errorf("scripted %s", a.reason)}
	}
	return inspect.Result{Architectures: a.archs, AnyArchitecture: a.any}, nil
}

func (f *fakeInspector) totalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

type recordedEvent struct{ Type, Reason string }

// fakeRecorder records Events.
type fakeRecorder struct {
	mu     sync.Mutex
	events []recordedEvent
	notes  []string
}

func (f *fakeRecorder) Eventf(_, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, recordedEvent{eventtype, reason})
	f.notes = append(f.notes, fmt.Sprintf(note, args...))
}

// harness is a reconciler over a fake client that counts writes.
type harness struct {
	r         *Reconciler
	c         client.Client
	inspector *fakeInspector
	recorder  *fakeRecorder
	clock     *clocktesting.FakeClock
	mu        sync.Mutex
	writes    int
	conflicts int // patches to fail with a conflict before letting them through
	// secretErr, when set, is the error of every Secret read (an apiserver refusing them).
	secretErr error
}

// testEpoch is when the harness's clock starts.
var testEpoch = time.Unix(1_000_000, 0)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func newHarness(t *testing.T, opts Options, scripts map[string][]answer, objs ...client.Object) *harness {
	t.Helper()
	h := &harness{
		inspector: &fakeInspector{scripts: scripts, calls: map[string]int{}},
		recorder:  &fakeRecorder{},
		clock:     clocktesting.NewFakeClock(testEpoch),
	}
	count := func() { h.mu.Lock(); h.writes++; h.mu.Unlock() }
	h.c = fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, secret := obj.(*corev1.Secret); secret && h.secretErr != nil {
				return h.secretErr
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count()
			h.mu.Lock()
			conflict := h.conflicts > 0
			if conflict {
				h.conflicts--
			}
			h.mu.Unlock()
			if conflict {
				return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New("scripted"))
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	opts.Inspector = h.inspector
	opts.Clock = h.clock
	r, err := New(withFlagDefaults(opts))
	if err != nil {
		t.Fatal(err)
	}
	r.bind(h.c, h.c, h.c, h.recorder)
	h.r = r
	return h
}

// drive reconciles the pod until nothing is requeued. At every scheduled retry it first checks
// that a pod event arriving halfway through the wait does not inspect early.
func (h *harness) drive(t *testing.T, name string) {
	t.Helper()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: testNamespace, Name: name}}
	for range 50 {
		res, err := h.r.Reconcile(context.Background(), req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if res.RequeueAfter == 0 {
			return
		}
		calls := h.inspector.totalCalls()
		half := res.RequeueAfter / 2
		h.clock.Step(half)
		early, err := h.r.Reconcile(context.Background(), req)
		if err != nil {
			t.Fatalf("early Reconcile: %v", err)
		}
		if early.RequeueAfter != res.RequeueAfter-half || h.inspector.totalCalls() != calls {
			t.Fatalf("event before the retry was due: requeue %v (want %v), inspections %d → %d",
				early.RequeueAfter, res.RequeueAfter-half, calls, h.inspector.totalCalls())
		}
		h.clock.Step(res.RequeueAfter - half)
	}
	t.Fatal("pod still requeued after 50 reconciliations")
}

func (h *harness) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: testNamespace, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// gatedPod is a test-namespace pod as the webhook leaves it: archgate's gate and label,
// app=web, a UID and one container per image.
func gatedPod(name string, images ...string) *objects.PodBuilder {
	return objects.Pod(testNamespace, name).WithUID(types.UID("uid-"+name)).WithGate().WithLabel("app", "web").WithImage(images...)
}

// ago is the time d before the harness's clock starts.
func ago(d time.Duration) time.Time { return testEpoch.Add(-d) }

func prefer(weight int32, arch string) corev1.PreferredSchedulingTerm {
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{objects.ArchIn(arch)}}}
}

func cppc(maxRetries *int32, platforms ...v1beta1.NodeAffinityScoringPlatformTerm) *v1beta1.ClusterPodPlacementConfig {
	c := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}}
	if maxRetries != nil {
		c.Spec.ImageInspection = &v1beta1.ImageInspection{MaxRetries: maxRetries}
	}
	if len(platforms) > 0 {
		c.Spec.Plugins = &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{Enabled: true, Platforms: platforms}}
	}
	return c
}

// fallbackCPPC is a ClusterPodPlacementConfig with a fallback architecture and GKE's arm64
// taint.
func fallbackCPPC(arch string) *v1beta1.ClusterPodPlacementConfig {
	c := cppc(nil)
	c.Spec.FallbackArchitecture = arch
	c.Spec.ArchitectureTaints = []v1beta1.ArchitectureTaint{{Architecture: "arm64"}}
	return c
}

// armToleration is the toleration of GKE's arm64 taint.
var armToleration = corev1.Toleration{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectNoSchedule}

func TestReconcile(t *testing.T) {
	const (
		multi  = "reg.example/multi:1"
		amd    = "reg.example/amd:1"
		arm    = "reg.example/arm:1"
		bundle = "reg.example/bundle:1"
	)
	all := []string{"amd64", "arm64", "ppc64le", "s390x"}
	scripts := func() map[string][]answer {
		return map[string][]answer{
			multi:  {ok(all...)},
			amd:    {ok("amd64")},
			arm:    {ok("arm64")},
			bundle: {{any: true}},
		}
	}
	userTerms := objects.RequiredAffinity(
		[]corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
		[]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")},
	)

	tests := map[string]struct {
		pod         *corev1.Pod
		objs        []client.Object
		scripts     map[string][]answer // overrides
		maxRetries  int
		maxGateAge  time.Duration     // 0: the default
		maxImages   int               // 0: the default
		secretErr   error             // every Secret read fails with it
		wantOutcome placement.Outcome // "": not ungated
		wantLabels  map[string]string // nil: as wantOutcome implies
		wantAff     *corev1.Affinity
		wantAnn     map[string]string
		wantGates   []corev1.PodSchedulingGate
		wantTols    []corev1.Toleration
		wantEvents  []recordedEvent
		wantCalls   int
		wantWrites  int
	}{
		"multi-arch image": {
			pod:         gatedPod("p", multi).Build(),
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn(all...)}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "amd64,arm64,ppc64le,s390x"},
			wantCalls:   1, wantWrites: 1,
		},
		"init and regular containers intersect": {
			pod:         gatedPod("p", multi, amd).WithInitImage(multi).Build(),
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("amd64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "amd64"},
			wantCalls:   2, wantWrites: 1,
		},
		"user terms are kept, the unpinned one gets the architectures": {
			pod:         gatedPod("p", multi).WithAffinity(userTerms.DeepCopy()).Build(),
			wantOutcome: placement.OutcomeArchSet,
			wantAff: objects.RequiredAffinity(
				[]corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}, objects.ArchIn(all...)},
				[]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")},
			),
			wantAnn:   map[string]string{v1beta1.AnnotationArchitectures: "amd64,arm64,ppc64le,s390x"},
			wantCalls: 1, wantWrites: 1,
		},
		"user pinned every term": {
			pod:         gatedPod("p", amd).WithAffinity(objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")})).Build(),
			wantOutcome: placement.OutcomeUserPinned,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "amd64"},
			wantCalls:   1, wantWrites: 1,
		},
		"no common architecture: ungated, unsatisfiable, warned": {
			pod:         gatedPod("p", amd, arm).Build(),
			wantOutcome: placement.OutcomeNoCommonArch,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{placement.NoSupportedArchitectureRequirement()}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: ""},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonNoCommonArchitecture}},
			wantCalls:   2, wantWrites: 1,
		},
		"images without binaries only": {
			pod:         gatedPod("p", bundle).Build(),
			wantOutcome: placement.OutcomeAnyArchitecture,
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: placement.AnnotationValueAnyArchitecture},
			wantCalls:   1, wantWrites: 1,
		},
		"image without binaries does not narrow": {
			pod:         gatedPod("p", bundle, arm).Build(),
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "arm64"},
			wantCalls:   2, wantWrites: 1,
		},
		"other scheduling gates stay": {
			pod:         gatedPod("p", arm).WithSchedulingGates("example.com/first", v1beta1.SchedulingGateName, "example.com/last").Build(),
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "arm64"},
			wantGates:   []corev1.PodSchedulingGate{{Name: "example.com/first"}, {Name: "example.com/last"}},
			wantCalls:   1, wantWrites: 1,
		},
		"transient failures, then success: one write": {
			pod:         gatedPod("p", arm).Build(),
			scripts:     map[string][]answer{arm: {fail(inspect.ReasonNetwork), fail(inspect.ReasonRateLimited), ok("arm64")}},
			maxRetries:  5,
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "arm64"},
			wantCalls:   3, wantWrites: 1,
		},
		"budget exhausted: ungated with the affinity unchanged": {
			pod:         gatedPod("p", arm).WithAffinity(userTerms.DeepCopy()).Build(),
			scripts:     map[string][]answer{arm: {fail(inspect.ReasonNetwork)}},
			maxRetries:  2,
			wantOutcome: placement.OutcomeInspectionFailed,
			wantAff:     userTerms,
			wantAnn:     map[string]string{v1beta1.AnnotationInspectionError: "network: " + arm},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonInspectionFailed}},
			wantCalls:   3, wantWrites: 1,
		},
		"the option's budget decides, not the cluster config read at run time": {
			// The operator renders spec.imageInspection.maxRetries into the option (and rolls the
			// controller when it changes): the Deployment says what the controller does.
			pod:         gatedPod("p", arm).Build(),
			objs:        []client.Object{cppc(ptr.To[int32](5))},
			scripts:     map[string][]answer{arm: {fail(inspect.ReasonAuth)}},
			maxRetries:  0,
			wantOutcome: placement.OutcomeInspectionFailed,
			wantAnn:     map[string]string{v1beta1.AnnotationInspectionError: "auth: " + arm},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonInspectionFailed}},
			wantCalls:   1, wantWrites: 1,
		},
		"an invalid reference is terminal (found before any registry request)": {
			pod:         gatedPod("p", "UPPER/case:1", arm).Build(),
			maxRetries:  5,
			wantOutcome: placement.OutcomeInspectionFailed,
			wantAnn:     map[string]string{v1beta1.AnnotationInspectionError: "invalid-reference: UPPER/case:1"},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonInspectionFailed}},
			wantCalls:   1, wantWrites: 1,
		},
		"a blocked registry is terminal: released at once, with the reason and an Event": {
			pod:         gatedPod("p", "blocked.example/app:1").Build(),
			scripts:     map[string][]answer{"blocked.example/app:1": {fail(inspect.ReasonBlocked)}},
			maxRetries:  5,
			wantOutcome: placement.OutcomeInspectionFailed,
			wantAnn:     map[string]string{v1beta1.AnnotationInspectionError: "blocked: blocked.example/app:1"},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonInspectionFailed}},
			wantCalls:   1, wantWrites: 1,
		},
		"an invalid reference reported by the inspector is terminal too": {
			pod:         gatedPod("p", "reg.example/odd:1").Build(),
			scripts:     map[string][]answer{"reg.example/odd:1": {fail(inspect.ReasonInvalidReference)}},
			maxRetries:  5,
			wantOutcome: placement.OutcomeInspectionFailed,
			wantAnn:     map[string]string{v1beta1.AnnotationInspectionError: "invalid-reference: reg.example/odd:1"},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonInspectionFailed}},
			wantCalls:   1, wantWrites: 1,
		},
		"not-found is retried (the pull secret may come later)": {
			pod:         gatedPod("p", arm).Build(),
			scripts:     map[string][]answer{arm: {fail(inspect.ReasonNotFound), ok("arm64")}},
			maxRetries:  5,
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "arm64"},
			wantCalls:   2, wantWrites: 1,
		},
		"a pod placement config wins over the cluster config": {
			pod:         gatedPod("p", multi).Build(),
			objs:        []client.Object{cppc(nil, objects.Platform("amd64", 10)), objects.PodPlacementConfig(testNamespace, "arm-first").WithPriority(10).WithPlatforms(objects.Platform("arm64", 75), objects.Platform("amd64", 25)).Build()},
			wantOutcome: placement.OutcomeArchSet,
			wantAff: func() *corev1.Affinity {
				a := objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn(all...)})
				a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{prefer(75, "arm64"), prefer(25, "amd64")}
				return a
			}(),
			// Precedence is documented behaviour: no Event, so no extra write per pod.
			wantAnn: map[string]string{v1beta1.AnnotationArchitectures: "amd64,arm64,ppc64le,s390x",
				v1beta1.AnnotationPreferredAffinitySource: "PodPlacementConfig team/arm-first"},
			wantCalls: 1, wantWrites: 1,
		},
		"cluster config weights only for compatible architectures": {
			pod:         gatedPod("p", amd).Build(),
			objs:        []client.Object{cppc(nil, objects.Platform("arm64", 90), objects.Platform("amd64", 10))},
			wantOutcome: placement.OutcomeArchSet,
			wantAff: func() *corev1.Affinity {
				a := objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("amd64")})
				a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{prefer(10, "amd64")}
				return a
			}(),
			wantAnn: map[string]string{v1beta1.AnnotationArchitectures: "amd64",
				v1beta1.AnnotationPreferredAffinitySource: "ClusterPodPlacementConfig cluster"},
			wantCalls: 1, wantWrites: 1,
		},
		"the user's preference wins over configurations": {
			pod: gatedPod("p", multi).WithAffinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{prefer(5, "s390x")},
			}}).Build(),
			objs:        []client.Object{cppc(nil, objects.Platform("amd64", 10))},
			wantOutcome: placement.OutcomeArchSet,
			wantAff: func() *corev1.Affinity {
				a := objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn(all...)})
				a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{prefer(5, "s390x")}
				return a
			}(),
			wantAnn:    map[string]string{v1beta1.AnnotationArchitectures: "amd64,arm64,ppc64le,s390x"},
			wantEvents: []recordedEvent{{corev1.EventTypeNormal, reasonPreferenceSkipped}},
			wantCalls:  1, wantWrites: 1,
		},
		// Attempts at 0, 0.1, 0.3, 0.7, 1.5 and 2.5 s; the next is due at 3.5 s, past the
		// maximum age, so the pod is reconciled at 3 s and released.
		"a registry that never answers holds the pod until the maximum gate age only": {
			pod:         gatedPod("p", arm).WithCreationTimestamp(ago(0)).Build(),
			scripts:     map[string][]answer{arm: {fail(inspect.ReasonTimeout)}},
			maxRetries:  20,
			maxGateAge:  3 * time.Second,
			wantOutcome: placement.OutcomeGateAgeExceeded,
			wantAnn:     map[string]string{v1beta1.AnnotationInspectionError: "gate held longer than maxGateAge (3s)"},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonGateAgeExceeded}},
			wantCalls:   6, wantWrites: 1,
		},
		"a pod gated past the maximum gate age is released without inspection": {
			pod:         gatedPod("p", arm).WithCreationTimestamp(ago(11 * time.Minute)).Build(),
			wantOutcome: placement.OutcomeGateAgeExceeded,
			wantAnn:     map[string]string{v1beta1.AnnotationInspectionError: "gate held longer than maxGateAge (10m0s)"},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonGateAgeExceeded}},
			wantCalls:   0, wantWrites: 1,
		},
		"more images than maxImagesPerPod: released at once, none inspected": {
			pod:         gatedPod("p", multi, amd, arm).Build(),
			maxImages:   2,
			wantOutcome: placement.OutcomeInspectionFailed,
			wantAnn:     map[string]string{v1beta1.AnnotationInspectionError: "the pod names 3 images, more than maxImagesPerPod (2); none was inspected"},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonInspectionFailed}},
			wantCalls:   0, wantWrites: 1,
		},
		"as many images as maxImagesPerPod: inspected": {
			pod:         gatedPod("p", multi, amd).Build(),
			maxImages:   2,
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("amd64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "amd64"},
			wantCalls:   2, wantWrites: 1,
		},
		"a pod younger than the maximum gate age is placed as usual": {
			pod:         gatedPod("p", arm).WithCreationTimestamp(ago(9 * time.Minute)).Build(),
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "arm64"},
			wantCalls:   1, wantWrites: 1,
		},
		"pull secrets the apiserver refuses to read count against the retry budget": {
			pod:         gatedPod("p", arm).WithPullSecrets("team-pull").Build(),
			secretErr:   apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "team-pull", errors.New("scripted")),
			maxRetries:  2,
			wantOutcome: placement.OutcomeInspectionFailed,
			wantAnn: map[string]string{v1beta1.AnnotationInspectionError: `credentials: reading image pull secret team/team-pull: ` +
				`secrets "team-pull" is forbidden: scripted`},
			wantEvents: []recordedEvent{{corev1.EventTypeWarning, reasonInspectionFailed}},
			wantCalls:  0, wantWrites: 1,
		},
		"a tainted architecture in the set: its toleration in the same write": {
			pod:         gatedPod("p", multi).Build(),
			objs:        []client.Object{fallbackCPPC("")},
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn(all...)}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "amd64,arm64,ppc64le,s390x"},
			wantTols:    []corev1.Toleration{armToleration},
			wantCalls:   1, wantWrites: 1,
		},
		"budget exhausted with a fallback architecture: placed there, with its toleration, labelled, warned": {
			pod:         gatedPod("p", arm).Build(),
			objs:        []client.Object{fallbackCPPC("arm64")},
			scripts:     map[string][]answer{arm: {fail(inspect.ReasonNetwork)}},
			maxRetries:  1,
			wantOutcome: placement.OutcomeInspectionFailed,
			wantLabels: map[string]string{"app": "web", v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved,
				v1beta1.LabelPlacement: v1beta1.PlacementInspectionFailed, v1beta1.LabelFallbackArchitecture: "arm64"},
			wantAff:    objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}),
			wantAnn:    map[string]string{v1beta1.AnnotationInspectionError: "network: " + arm},
			wantTols:   []corev1.Toleration{armToleration},
			wantEvents: []recordedEvent{{corev1.EventTypeWarning, reasonFallbackArchitecture}},
			wantCalls:  2, wantWrites: 1,
		},
		"the fallback architecture never overrides the user's pin": {
			pod:         gatedPod("p", arm).WithAffinity(objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("amd64")})).Build(),
			objs:        []client.Object{fallbackCPPC("arm64")},
			scripts:     map[string][]answer{arm: {fail(inspect.ReasonBlocked)}},
			wantOutcome: placement.OutcomeInspectionFailed,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("amd64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationInspectionError: "blocked: " + arm},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonInspectionFailed}},
			wantCalls:   1, wantWrites: 1,
		},
		"a pod gated past the maximum gate age goes to the fallback architecture": {
			pod:         gatedPod("p", arm).WithCreationTimestamp(ago(11 * time.Minute)).Build(),
			objs:        []client.Object{fallbackCPPC("amd64")},
			wantOutcome: placement.OutcomeGateAgeExceeded,
			wantLabels: map[string]string{"app": "web", v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved,
				v1beta1.LabelPlacement: v1beta1.PlacementGateAgeExceeded, v1beta1.LabelFallbackArchitecture: "amd64"},
			wantAff:    objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("amd64")}),
			wantAnn:    map[string]string{v1beta1.AnnotationInspectionError: "gate held longer than maxGateAge (10m0s)"},
			wantEvents: []recordedEvent{{corev1.EventTypeWarning, reasonFallbackArchitecture}},
			wantCalls:  0, wantWrites: 1,
		},
		"a pod whose gate someone else removed only has its gated label released": {
			pod:       gatedPod("p", multi).WithSchedulingGates("example.com/other").Build(),
			wantGates: []corev1.PodSchedulingGate{{Name: "example.com/other"}},
			wantLabels: map[string]string{"app": "web",
				v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: v1beta1.PlacementReleased},
			wantCalls:  0,
			wantWrites: 1,
		},
		"a pod without our gate and label is left alone": {
			pod:        gatedPod("p", multi).WithSchedulingGates("example.com/other").WithLabels("app", "web").Build(),
			wantGates:  []corev1.PodSchedulingGate{{Name: "example.com/other"}},
			wantLabels: map[string]string{"app": "web"},
			wantCalls:  0,
			wantWrites: 0,
		},
		"a pod still held by its local gate is left alone": {
			pod: gatedPod("p", multi).WithSchedulingGates(v1beta1.LocalSchedulingGateName, v1beta1.SchedulingGateName).
				WithLabels("app", "web", v1beta1.LabelSchedulingGate, v1beta1.LabelValueGated, v1beta1.LabelLocalSchedulingGate, v1beta1.LabelValueGated).Build(),
			wantGates: []corev1.PodSchedulingGate{{Name: v1beta1.LocalSchedulingGateName}, {Name: v1beta1.SchedulingGateName}},
			wantLabels: map[string]string{"app": "web",
				v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated, v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueGated},
			wantCalls:  0,
			wantWrites: 0,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := scripts()
			for k, v := range tc.scripts {
				s[k] = v
			}
			h := newHarness(t, Options{MaxRetries: tc.maxRetries, MaxGateAge: tc.maxGateAge, MaxImagesPerPod: tc.maxImages,
				RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second},
				s, append([]client.Object{tc.pod}, tc.objs...)...)
			h.secretErr = tc.secretErr
			h.drive(t, tc.pod.Name)

			got := h.pod(t, tc.pod.Name)
			wantLabels := map[string]string{"app": "web", v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}
			if tc.wantOutcome != "" {
				wantLabels[v1beta1.LabelSchedulingGate] = v1beta1.LabelValueRemoved
				wantLabels[v1beta1.LabelPlacement] = tc.wantOutcome.LabelValue()
			}
			if tc.wantLabels != nil {
				wantLabels = tc.wantLabels
			}
			if diff := cmp.Diff(wantLabels, got.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			wantAff := tc.wantAff
			if tc.wantOutcome == "" {
				wantAff = tc.pod.Spec.Affinity
			}
			if diff := cmp.Diff(wantAff, got.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnn, got.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantGates, got.Spec.SchedulingGates); diff != "" {
				t.Errorf("scheduling gates (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTols, got.Spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, h.recorder.events); diff != "" {
				t.Errorf("events (-want +got):\n%s\nnotes: %q", diff, h.recorder.notes)
			}
			if got := h.inspector.totalCalls(); got != tc.wantCalls {
				t.Errorf("inspections = %d, want %d", got, tc.wantCalls)
			}
			if h.writes != tc.wantWrites {
				t.Errorf("apiserver writes = %d, want %d", h.writes, tc.wantWrites)
			}
			if n := h.r.retries.Len(); n != 0 {
				t.Errorf("%d pods left in the retry tracker", n)
			}
		})
	}
}

func TestReconcileConflictRequeues(t *testing.T) {
	h := newHarness(t, Options{}, map[string][]answer{"a:1": {ok("amd64")}}, gatedPod("p", "a:1").Build())
	h.conflicts = 1
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: testNamespace, Name: "p"}}
	res, err := h.r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter != conflictRequeueDelay {
		t.Fatalf("Reconcile after a conflict = %+v, %v; want a requeue after %v", res, err, conflictRequeueDelay)
	}
	if res, err := h.r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("second Reconcile = %+v, %v", res, err)
	}
	if got := h.pod(t, "p").Labels[v1beta1.LabelPlacement]; got != placement.OutcomeArchSet.LabelValue() {
		t.Errorf("placement label = %q", got)
	}
	if len(h.recorder.events) != 0 {
		t.Errorf("events %v, want none", h.recorder.events)
	}
}

func TestReconcileCredentials(t *testing.T) {
	const image = "reg.example/private/app:1"
	global := types.NamespacedName{Namespace: "archgate-system", Name: "pull-secret"}
	var seen []string
	scripts := map[string][]answer{image: {{archs: []string{"arm64"}, observe: func(c credentials.Candidates) {
		for _, cred := range c {
			seen = append(seen, cred.Source.String())
		}
	}}}}
	h := newHarness(t, Options{GlobalPullSecret: &global}, scripts,
		gatedPod("p", image).WithPullSecrets("missing", "team-pull").Build(),
		objects.PullSecret(testNamespace, "team-pull").WithCredentials("reg.example/private", "team", "pw").Build(),
		objects.PullSecret(global.Namespace, global.Name).WithCredentials("reg.example", "global", "pw").Build(),
	)
	h.drive(t, "p")
	want := []string{testNamespace + "/team-pull", "global " + global.String()}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("credential candidates (-want +got):\n%s", diff)
	}
}

// recordingInvalidator records the identities it was asked to drop.
type recordingInvalidator struct{ ids []credentials.Identity }

func (r *recordingInvalidator) Invalidate(ids ...credentials.Identity) int {
	r.ids = append(r.ids, ids...)
	return len(ids)
}

// The global pull secret is read again once globalPullSecretRefresh has passed, not sooner; a
// rotation invalidates what the old credentials read, a deletion everything it held, and a
// failed re-read keeps the last secret.
func TestGlobalPullSecretInvalidation(t *testing.T) {
	key := types.NamespacedName{Namespace: "archgate-system", Name: "pull-secret"}
	before := objects.PullSecret(key.Namespace, key.Name).WithCredentials("reg.example", "global", "old").Build()
	reads, failReads := 0, false
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(before).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			if failReads {
				return errors.New("apiserver unavailable")
			}
			return c.Get(ctx, k, obj, opts...)
		},
	}).Build()
	inv := &recordingInvalidator{}
	clk := clocktesting.NewFakeClock(testEpoch)
	g := &globalPullSecret{key: key, reader: c, invalidator: inv, clock: clk}
	ctx := context.Background()

	cfg, err := g.Config(ctx)
	if err != nil || cfg == nil {
		t.Fatalf("Config = %v, %v", cfg, err)
	}
	oldIDs := cfg.Identities()

	// Rotation: seen once the refresh period has passed, and the old identity is invalidated.
	rotated := objects.PullSecret(key.Namespace, key.Name).WithCredentials("reg.example", "global", "new").Build()
	rotated.ResourceVersion = ""
	if err := c.Delete(ctx, before); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	reads = 0
	clk.Step(globalPullSecretRefresh / 2)
	if cfg, _ := g.Config(ctx); reads != 0 || !slices.Equal(cfg.Identities(), oldIDs) {
		t.Fatalf("within the refresh period: %d reads, identities %v; want none and the old ones", reads, cfg.Identities())
	}
	clk.Step(globalPullSecretRefresh / 2)
	cfg, _ = g.Config(ctx)
	if diff := cmp.Diff(oldIDs, inv.ids); diff != "" {
		t.Errorf("invalidated after rotation (-want +got):\n%s", diff)
	}
	newIDs := cfg.Identities()

	// A failed re-read keeps the last secret and invalidates nothing.
	inv.ids, failReads = nil, true
	clk.Step(globalPullSecretRefresh)
	if cfg, err := g.Config(ctx); err != nil || !slices.Equal(cfg.Identities(), newIDs) || inv.ids != nil {
		t.Errorf("after a failed re-read: %v, %v, invalidated %v; want the last secret, nothing invalidated", cfg, err, inv.ids)
	}
	failReads = false

	// Deletion: everything it held is invalidated and no global credentials remain.
	if err := c.Delete(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := g.Config(ctx); cfg != nil {
		t.Errorf("Config after deletion = %v, want nil", cfg)
	}
	if diff := cmp.Diff(newIDs, inv.ids); diff != "" {
		t.Errorf("invalidated after deletion (-want +got):\n%s", diff)
	}
}

// stubNodeCredentials answers fixed plugin credentials and error for every image.
type stubNodeCredentials struct {
	configs []credentials.Config
	err     error
}

func (s stubNodeCredentials) Configs(context.Context, string) ([]credentials.Config, error) {
	return s.configs, s.err
}

func (s stubNodeCredentials) CachedConfigs() []credentials.Config { return s.configs }

func TestInspectImageWithNodeCredentials(t *testing.T) {
	const image = "reg.example/private/app:1"
	plugin, err := credentials.NewConfig(credentials.Source{Plugin: "ecr"}, map[string]credentials.AuthConfig{"reg.example": {Username: "AWS", Password: "token"}})
	if err != nil {
		t.Fatal(err)
	}
	pluginErr := errors.New("credential provider other for image " + image + ": exit status 1: no IAM role")
	tests := map[string]struct {
		node       stubNodeCredentials
		answer     answer
		wantSeen   []string
		wantErr    []string // substrings of the error; none: success
		wantReason inspect.Reason
	}{
		"plugin credentials after the pod's": {
			node: stubNodeCredentials{configs: []credentials.Config{plugin}}, answer: answer{archs: []string{"arm64"}},
			wantSeen: []string{"ns/team", "credential provider ecr"},
		},
		"a failed plugin is left out and named when the inspection fails": {
			node: stubNodeCredentials{err: pluginErr}, answer: answer{reason: inspect.ReasonAuth},
			wantSeen: []string{"ns/team"}, wantErr: []string{"scripted auth", "no IAM role"}, wantReason: inspect.ReasonAuth,
		},
		"a failed plugin does not fail an inspection that succeeds": {
			node: stubNodeCredentials{configs: []credentials.Config{plugin}, err: pluginErr}, answer: answer{archs: []string{"amd64"}},
			wantSeen: []string{"ns/team", "credential provider ecr"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var seen []string
			tc.answer.observe = func(c credentials.Candidates) {
				for _, cred := range c {
					seen = append(seen, cred.Source.String())
				}
			}
			r, err := New(withFlagDefaults(Options{
				Inspector:       &fakeInspector{scripts: map[string][]answer{image: {tc.answer}}, calls: map[string]int{}},
				NodeCredentials: tc.node,
			}))
			if err != nil {
				t.Fatal(err)
			}
			team, err := credentials.NewConfig(credentials.Source{Namespace: "ns", Name: "team"}, map[string]credentials.AuthConfig{"reg.example/private": {Username: "team", Password: "pw"}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.inspectImage(context.Background(), credentials.NewKeyring(nil, team), image)
			if diff := cmp.Diff(tc.wantSeen, seen); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("inspectImage: %v", err)
				}
				return
			}
			var ie *inspect.Error
			if !errors.As(err, &ie) || ie.Reason != tc.wantReason || ie.Image != image {
				t.Fatalf("inspectImage error %#v, want an inspect.Error %s for %s", err, tc.wantReason, image)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// TestReconcileReleasesWhenInspectionReachesTheDeadline: an inspection that runs into the pod's
// deadline releases it in the same reconcile, without a requeue behind every other gated pod.
func TestReconcileReleasesWhenInspectionReachesTheDeadline(t *testing.T) {
	const image = "reg.example/hangs:1"
	h := newHarness(t, Options{MaxRetries: 20, MaxGateAge: time.Minute}, map[string][]answer{}, gatedPod("p", image).WithCreationTimestamp(ago(0)).Build())
	h.inspector.scripts[image] = []answer{{reason: inspect.ReasonTimeout, observe: func(credentials.Candidates) { h.clock.Step(time.Minute) }}}
	res, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: testNamespace, Name: "p"}})
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile = %+v, %v; want the pod released, no requeue", res, err)
	}
	if got := h.pod(t, "p").Labels[v1beta1.LabelPlacement]; got != placement.OutcomeGateAgeExceeded.LabelValue() {
		t.Errorf("placement label = %q, want %q", got, placement.OutcomeGateAgeExceeded)
	}
	if h.writes != 1 || h.inspector.totalCalls() != 1 {
		t.Errorf("writes %d, inspections %d; want 1 and 1", h.writes, h.inspector.totalCalls())
	}
}

// TestReconcileNamespaceShare checks that a pod whose namespace already holds its share of the
// workers is put back for a moment without inspecting, writing or spending a retry, and is
// placed once a worker of its namespace is free.
func TestReconcileNamespaceShare(t *testing.T) {
	const image = "reg.example/arm:1"
	h := newHarness(t, Options{Workers: 8, NamespaceWorkers: 1}, map[string][]answer{image: {ok("arm64")}}, gatedPod("p", image).Build())
	if !h.r.tenants.acquire(testNamespace) { // another pod of the namespace is being worked on
		t.Fatal("the namespace's only worker was not free")
	}
	reads := 0
	h.r.pods = countingReader{Reader: h.c, reads: &reads}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: testNamespace, Name: "p"}}
	res, err := h.r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter < tenantWait || res.RequeueAfter >= 2*tenantWait {
		t.Fatalf("Reconcile = %+v, %v; want a requeue within [%s, %s)", res, err, tenantWait, 2*tenantWait)
	}
	if h.inspector.totalCalls() != 0 || h.writes != 0 || reads != 0 || h.r.retries.Retries("uid-p") != 0 {
		t.Fatalf("inspections %d, writes %d, apiserver reads %d, retries %d while deferred; want none",
			h.inspector.totalCalls(), h.writes, reads, h.r.retries.Retries("uid-p"))
	}
	if got := testutil.ToFloat64(h.r.metrics.namespaceDeferrals); got != 1 {
		t.Errorf("namespace deferrals counted %v, want 1", got)
	}
	h.r.tenants.release(testNamespace)
	h.drive(t, "p")
	if got := h.pod(t, "p").Labels[v1beta1.LabelPlacement]; got != placement.OutcomeArchSet.LabelValue() {
		t.Errorf("placement label = %q, want %q once a worker was free", got, placement.OutcomeArchSet)
	}
	if n := h.r.tenants.byNamespace.Held(); n != 0 {
		t.Errorf("workers of %d namespaces still held after the reconcile", n)
	}
}

// TestReconcileRegistryBusy checks that a pod whose images meet only busy registries waits its
// turn without spending its retry budget, and is placed once the registry has room; a busy
// registry beside a real failure is retried as the failure is.
func TestReconcileRegistryBusy(t *testing.T) {
	const image, busy, broken = "reg.example/arm:1", "reg.example/busy:1", "reg.example/broken:1"
	h := newHarness(t, Options{}, map[string][]answer{
		image:  {fail(inspect.ReasonRegistryBusy), fail(inspect.ReasonRegistryBusy), ok("arm64")},
		busy:   {fail(inspect.ReasonRegistryBusy)},
		broken: {fail(inspect.ReasonNetwork)},
	}, gatedPod("p", image).Build(), gatedPod("q", busy, broken).Build())
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: testNamespace, Name: "p"}}
	for round := range 2 {
		// The wait doubles with each busy round in a row, plus up to busyWait of jitter.
		lo := busyWait << round
		res, err := h.r.Reconcile(context.Background(), req)
		if err != nil || res.RequeueAfter < lo || res.RequeueAfter >= lo+busyWait {
			t.Fatalf("busy round %d: Reconcile = %+v, %v; want a requeue within [%s, %s)", round, res, err, lo, lo+busyWait)
		}
		if got := h.r.retries.Retries("uid-p"); got != 0 || h.writes != 0 {
			t.Fatalf("retries %d, writes %d after a busy registry; want none", got, h.writes)
		}
	}
	h.drive(t, "p")
	if got := h.pod(t, "p").Labels[v1beta1.LabelPlacement]; got != placement.OutcomeArchSet.LabelValue() {
		t.Errorf("placement label = %q, want %q once the registry had room", got, placement.OutcomeArchSet)
	}
	if n := h.r.busy.NumRequeues("uid-p"); n != 0 {
		t.Errorf("busy rounds remembered after the pod was placed: %d", n)
	}
	// A registry busy for good beside a failing image: the failure's retries run out and the
	// pod is released, not deferred for ever.
	h.drive(t, "q")
	if got := h.pod(t, "q").Labels[v1beta1.LabelPlacement]; got != placement.OutcomeInspectionFailed.LabelValue() {
		t.Errorf("placement label = %q, want %q", got, placement.OutcomeInspectionFailed)
	}
}

// countingReader counts the reads of the pods' apiserver reader.
type countingReader struct {
	client.Reader
	reads *int
}

func (c countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	*c.reads++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestReconcileOverAgeWhileNamespaceBusy checks that a pod past its gate deadline is released
// even while its namespace holds its whole share of the workers.
func TestReconcileOverAgeWhileNamespaceBusy(t *testing.T) {
	const image = "reg.example/hangs:1"
	h := newHarness(t, Options{Workers: 8, NamespaceWorkers: 1, MaxGateAge: time.Minute}, map[string][]answer{},
		gatedPod("p", image).WithCreationTimestamp(ago(2*time.Minute)).Build())
	if !h.r.tenants.acquire(testNamespace) {
		t.Fatal("the namespace's only worker was not free")
	}
	res, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: testNamespace, Name: "p"}})
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile = %+v, %v; want the pod released, no requeue", res, err)
	}
	if got := h.pod(t, "p").Labels[v1beta1.LabelPlacement]; got != placement.OutcomeGateAgeExceeded.LabelValue() {
		t.Errorf("placement label = %q, want %q", got, placement.OutcomeGateAgeExceeded)
	}
	if h.inspector.totalCalls() != 0 {
		t.Errorf("%d inspections for an over-age pod", h.inspector.totalCalls())
	}
}
