//go:build integration

package floorpolicy_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/archgate/archgate/operator/pkg/testing/testenv"

	"github.com/archgate/archgate/simulator/internal/floorpolicy"
	"github.com/archgate/archgate/simulator/internal/workload"
)

var k8s client.Client

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{}, func(env *testenv.Env) error {
		var err error
		k8s, err = testenv.Client(env.Config, clientgoscheme.AddToScheme)
		return err
	}))
}

// TestFloorPolicy creates the workload's pods with their answers through the floor policy
// and wants each stored as the handwritten pass creates it: the same affinity, the answer
// gone, the pod's own annotations kept, and the floor's label.
func TestFloorPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const ns = "floor-policy"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	unregister, err := floorpolicy.Register(ctx, k8s, floorpolicy.Options{OperatorNamespace: "archgate-system"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unregister(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("unregistering: %v", err)
		}
	})
	pods := map[string]struct {
		pod workload.Pod
		// unlabelled creates the pod without labels: the policy then adds the map itself.
		unlabelled bool
	}{
		"one architecture":   {pod: workload.Pod{Index: 1, Allowed: []string{"amd64"}}},
		"two architectures":  {pod: workload.Pod{Index: 2, Allowed: []string{"amd64", "arm64"}}},
		"none shared":        {pod: workload.Pod{Index: 3}},
		"runs anywhere":      {pod: workload.Pod{Index: 4, AnyArch: true}},
		"pins its own":       {pod: workload.Pod{Index: 5, Allowed: []string{"amd64", "s390x"}, ArchAffinity: "s390x"}},
		"with an annotation": {pod: workload.Pod{Index: 6, Allowed: []string{"ppc64le"}, AnnotationBytes: 16}},
		"without labels":     {pod: workload.Pod{Index: 7, Allowed: []string{"arm64"}}, unlabelled: true},
	}
	opts := workload.ObjectOptions{Host: "registry.example", Namespaces: []string{ns},
		Labels: map[string]string{"app": "floor"}, CPU: resource.MustParse("10m"), Memory: resource.MustParse("16Mi")}
	for name, tc := range pods {
		t.Run(name, func(t *testing.T) {
			p := tc.pod
			p.Containers = []string{fmt.Sprintf("app/%d:1", p.Index)}
			opts := opts
			if tc.unlabelled {
				opts.Labels = nil
			}
			answer := opts
			answer.HandwrittenAnswer = true
			handwritten := opts
			handwritten.HandwrittenAffinity = true
			want := p.Object(handwritten)
			var got *corev1.Pod
			// The apiserver applies a new policy once its informers have it: poll with a bound.
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				got = p.Object(answer)
				if err := k8s.Create(ctx, got, client.DryRunAll); err != nil {
					return false, err
				}
				return got.Labels[floorpolicy.Label] == floorpolicy.LabelValue, nil
			})
			if err != nil {
				t.Fatalf("the floor policy did not admit %s: %v", got.Name, err)
			}
			if diff := cmp.Diff(want.Spec.Affinity, got.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-handwritten +floor policy):\n%s", diff)
			}
			if diff := cmp.Diff(want.Annotations, got.Annotations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("annotations (-handwritten +floor policy):\n%s", diff)
			}
		})
	}
}
