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

package podplacement_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/internal/controller/podplacement"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/tools/explain"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// recordingRegistry answers from a map and records, per image, the sources of the credentials
// it was asked with.
type recordingRegistry struct {
	archs map[string][]string
	mu    sync.Mutex
	asked map[string][]string
}

func (r *recordingRegistry) Architectures(_ context.Context, image string, creds credentials.Candidates) (inspect.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sources []string
	for _, c := range creds {
		sources = append(sources, c.Source.String()+" "+c.Pattern)
	}
	r.asked[image] = sources
	return inspect.Result{Architectures: r.archs[image]}, nil
}

// TestExplainAgreesWithTheController: `archgate explain` inspects the same image references
// (trimmed, de-duplicated) with the same credentials (an unparsable and a missing pull secret
// skipped, the global pull secret last) and reports the architectures the controller writes.
func TestExplainAgreesWithTheController(t *testing.T) {
	const operatorNamespace = "archgate-system"
	broken := objects.PullSecret("team-a", "broken").WithAuth("registry.example", "user", "pass").Build()
	broken.Data[corev1.DockerConfigJsonKey] = []byte("{")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-1", UID: "uid-web-1",
			Labels: map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}},
		Spec: corev1.PodSpec{
			SchedulingGates:  []corev1.PodSchedulingGate{{Name: v1beta1.SchedulingGateName}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "broken"}, {Name: "missing"}, {Name: "team-creds"}},
			InitContainers:   []corev1.Container{{Name: "setup", Image: " registry.example/a:1 "}},
			Containers:       []corev1.Container{{Name: "app", Image: "registry.example/a:1"}, {Name: "side", Image: "other.example/b:1"}},
		},
	}
	objs := []client.Object{
		pod, broken,
		objects.PullSecret("team-a", "team-creds").WithAuth("registry.example", "user", "pass").Build(),
		objects.PullSecret(operatorNamespace, "global").WithAuth("other.example", "user", "pass").Build(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&v1beta1.ClusterPodPlacementConfig{
			ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
			Spec:       v1beta1.ClusterPodPlacementConfigSpec{GlobalPullSecretRef: &v1beta1.NamespacedObjectReference{Name: "global"}},
		},
	}
	archs := map[string][]string{"registry.example/a:1": {"amd64", "arm64", "s390x"}, "other.example/b:1": {"arm64", "amd64"}}
	scheme, err := components.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	key := types.NamespacedName{Namespace: "team-a", Name: "web-1"}

	explained := &recordingRegistry{archs: archs, asked: map[string][]string{}}
	facts, err := explain.Gather(context.Background(), c, key, explain.Options{Inspector: explained, OperatorNamespace: operatorNamespace})
	if err != nil {
		t.Fatal(err)
	}
	explainArchs, complete := facts.Compatible()
	if !complete {
		t.Fatalf("explain could not inspect every image: %+v", facts.Images)
	}

	placed := &recordingRegistry{archs: archs, asked: map[string][]string{}}
	r, err := podplacement.New(podplacement.Options{
		Inspector:        placed,
		GlobalPullSecret: &types.NamespacedName{Namespace: operatorNamespace, Name: "global"},
		Workers:          cmdline.DefaultWorkers, InspectWorkers: cmdline.DefaultInspectWorkers,
		RetryBaseDelay: cmdline.DefaultRetryBaseDelay, RetryMaxDelay: cmdline.DefaultRetryMaxDelay,
	})
	if err != nil {
		t.Fatal(err)
	}
	podplacement.BindForTest(r, c, events.NewFakeRecorder(10))
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	after := &corev1.Pod{}
	if err := c.Get(context.Background(), key, after); err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff(placed.asked, explained.asked); diff != "" {
		t.Errorf("explain inspected other images or with other credentials than the controller (-controller +explain):\n%s", diff)
	}
	if got, want := strings.Join(explainArchs, ","), after.Annotations[v1beta1.AnnotationArchitectures]; got != want {
		t.Errorf("explain says the images are compatible with %q, the controller wrote %q", got, want)
	}
	if want := []string{"global " + operatorNamespace + "/global other.example"}; !slices.Equal(placed.asked["other.example/b:1"], want) {
		t.Errorf("the controller inspected other.example/b:1 with %v, want %v", placed.asked["other.example/b:1"], want)
	}
}
