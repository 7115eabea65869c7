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

package placementrules

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// digits is a CEL list of ten elements: nested six times, a comprehension over it runs a
// million steps.
const digits = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"

// million is an expression whose every evaluation runs a million comprehension steps: more
// than the per-call cost limit, which its compile-time estimate already shows.
const million = digits + ".map(a, " + digits + ".map(b, " + digits + ".map(c, " + digits + ".map(d, " + digits + ".map(e, " +
	digits + ".map(f, 0)))))).size() > 0"

// costly is million behind a condition: its cheapest evaluation is cheap, so it compiles, but on
// a pod it does not short-circuit for it breaches the per-call cost limit at run time.
const costly = "object.metadata.name == 'never' || " + million

func newEvaluator() *Evaluator {
	// Pinned, so that what the environments accept does not move with the libraries' default.
	return New(Options{CompatibilityVersion: version.MajorMinor(1, 36)})
}

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		expression string
		old        string // the expression the object had before (an update); "" on create
		// want is a substring of the error; "" means valid.
		want string
	}{
		"a label":                          {expression: "object.metadata.labels.team == 'ml'"},
		"guarded with has() and optionals": {expression: "has(object.metadata.labels) && object.metadata.?labels.?team.orValue('') == 'ml'"},
		"the pod's spec, the string library": {
			expression: "object.spec.containers.exists(c, c.image.startsWith('registry.example/ml/')) && object.metadata.namespace.matches('^batch-')",
		},
		"a trailing comment": {expression: "object.metadata.namespace == 'batch' // batch jobs"},
		"syntax error":       {expression: "object.metadata.labels.team ==", want: "Syntax error"},
		"not a bool":         {expression: "object.metadata.labels.team", want: "must evaluate to bool but got dyn"},
		"a string":           {expression: "'amd64'", want: "must evaluate to bool but got string"},
		"another variable":   {expression: "request.namespace == 'batch'", want: "undeclared reference to 'request'"},
		"certain to breach the cost limit": {expression: million,
			want: "more than the limit of one evaluation (1000000): it could never finish"},
		"a function newer than the compatibility version": {expression: "object.spec.containers.map(c, c.name).includes('app')",
			want: "undeclared reference to 'includes'"},
		"the same function in an expression the object already had": {expression: "object.spec.containers.map(c, c.name).includes('app')",
			old: "object.spec.containers.map(c, c.name).includes('app')"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rules := []v1beta1.PlacementRule{
				{Name: "fine", Expression: "true"},
				{Name: "tested", Expression: tc.expression},
			}
			var old []v1beta1.PlacementRule
			if tc.old != "" {
				old = []v1beta1.PlacementRule{{Name: "tested", Expression: tc.old}}
			}
			errs := newEvaluator().Validate(field.NewPath("spec", "placementRules"), rules, old)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("Validate = %v, want no error", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("Validate = %v, want one error", errs)
			}
			prefix := `spec.placementRules[1].expression: Invalid value: "` + strings.ReplaceAll(tc.expression, `"`, `\"`) + `": `
			if got := errs[0].Error(); !strings.HasPrefix(got, prefix) || !strings.Contains(got, tc.want) {
				t.Errorf("error = %q, want %q followed by a message containing %q", got, prefix, tc.want)
			}
		})
	}
}

// mlPod is the pod the evaluations read: labelled team=ml, in namespace batch-1, with managed
// fields and a status that rules do not see.
func mlPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "batch-1", Name: "trainer", Labels: map[string]string{"team": "ml"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "train", Image: "registry.example/ml/trainer:1"}},
			NodeSelector: map[string]string{"disk": "ssd"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func TestEvaluate(t *testing.T) {
	type result struct {
		Result Result
		Err    string // a substring of the error
	}
	tests := map[string]struct {
		expression string
		want       result
	}{
		"a matching label":               {expression: "object.metadata.labels.team == 'ml'", want: result{Result: Matched}},
		"a namespace pattern that fails": {expression: "object.metadata.namespace.startsWith('prod-')", want: result{Result: Unmatched}},
		"the pod's spec": {expression: "object.spec.containers.exists(c, c.image.startsWith('registry.example/ml/'))",
			want: result{Result: Matched}},
		"a missing label read without has()": {expression: "object.metadata.labels.owner == 'data'",
			want: result{Result: Failed, Err: "no such key: owner"}},
		"a missing label read with has()": {expression: "has(object.metadata.labels.owner) && object.metadata.labels.owner == 'data'",
			want: result{Result: Unmatched}},
		"a missing map read without has()": {expression: "object.metadata.annotations.team == 'ml'",
			want: result{Result: Failed, Err: "no such key: annotations"}},
		"the cost limit of one evaluation": {expression: costly, want: result{Result: Failed, Err: "cost limit exceeded"}},
		"a stored rule that does not compile": {expression: "object.metadata.name ==",
			want: result{Result: Failed, Err: "compiling: ERROR"}},
		"a stored rule that is not a bool": {expression: "object.metadata.name",
			want: result{Result: Failed, Err: "must evaluate to bool"}},
		"identity of the pod":                    {expression: "object.apiVersion == 'v1' && object.kind == 'Pod'", want: result{Result: Matched}},
		"managed fields are not part of the pod": {expression: "has(object.metadata.managedFields)", want: result{Result: Unmatched}},
		"nor is its status":                      {expression: "has(object.status)", want: result{Result: Unmatched}},
	}
	e := newEvaluator()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rule := v1beta1.PlacementRule{Name: "r", Expression: tc.expression}
			evals := e.Evaluate(t.Context(), []v1beta1.PlacementRule{rule}, mlPod())
			if len(evals) != 1 {
				t.Fatalf("Evaluate = %v, want one evaluation", evals)
			}
			got := result{Result: evals[0].Result}
			if evals[0].Err != nil {
				got.Err = evals[0].Err.Error()
				if tc.want.Err != "" && strings.Contains(got.Err, tc.want.Err) {
					got.Err = tc.want.Err
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("evaluation (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(rule, evals[0].Rule); diff != "" {
				t.Errorf("rule (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEvaluateSeveral: the rules are evaluated in order, each on its own; Matched and Failed
// keep that order, and a failed rule never matches.
func TestEvaluateSeveral(t *testing.T) {
	rules := []v1beta1.PlacementRule{
		{Name: "ml", Expression: "object.metadata.labels.team == 'ml'", PreferredArchitectures: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 60}}},
		{Name: "broken", Expression: "object.metadata.labels.owner == 'x'", RequiredArchitectures: []string{"s390x"}},
		{Name: "prod", Expression: "object.metadata.namespace.startsWith('prod-')", RequiredArchitectures: []string{"amd64"}},
		{Name: "batch", Expression: "object.metadata.namespace.startsWith('batch-')", RequiredArchitectures: []string{"amd64", "arm64"}},
	}
	evals := newEvaluator().Evaluate(t.Context(), rules, mlPod())
	var results []Result
	for _, e := range evals {
		results = append(results, e.Result)
	}
	if diff := cmp.Diff([]Result{Matched, Failed, Unmatched, Matched}, results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]v1beta1.PlacementRule{rules[0], rules[3]}, evals.Matched()); diff != "" {
		t.Errorf("Matched (-want +got):\n%s", diff)
	}
	if failed := evals.Failed(); len(failed) != 1 || failed[0].Rule.Name != "broken" {
		t.Errorf("Failed = %v, want the rule broken", failed)
	}
	if got := newEvaluator().Evaluate(t.Context(), nil, nil); got != nil {
		t.Errorf("Evaluate without rules = %v, want nil", got)
	}
}

// TestEvaluateBudget: once a pod's rules have spent the runtime budget of one policy binding,
// the remaining rules fail instead of running: ten rules at the per-call limit cannot cost a
// pod more than the apiserver would let one admission policy cost.
func TestEvaluateBudget(t *testing.T) {
	var rules []v1beta1.PlacementRule
	for range 11 {
		rules = append(rules, v1beta1.PlacementRule{Name: "costly", Expression: costly})
	}
	rules = append(rules, v1beta1.PlacementRule{Name: "cheap", Expression: "true"})
	evals := newEvaluator().Evaluate(t.Context(), rules, mlPod())
	if first := evals[0]; first.Result != Failed || !strings.Contains(first.Err.Error(), "cost limit exceeded") {
		t.Errorf("first rule: %s %v, want the per-call cost limit", first.Result, first.Err)
	}
	if last := evals[len(evals)-1]; last.Result != Failed || !errors.Is(last.Err, errOutOfBudget) {
		t.Errorf("last rule: %s %v, want out of the budget", last.Result, last.Err)
	}
}

// TestEvaluateCancelled: a cancelled context stops an evaluation; the rule fails, it does not
// match.
func TestEvaluateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rule := v1beta1.PlacementRule{Name: "costly", Expression: costly}
	evals := newEvaluator().Evaluate(ctx, []v1beta1.PlacementRule{rule}, mlPod())
	if evals[0].Result != Failed || !errors.Is(evals[0].Err, context.Canceled) {
		t.Errorf("evaluation = %s %v, want failed with context.Canceled", evals[0].Result, evals[0].Err)
	}
}

// TestCompiledOnce: an expression is compiled once, whatever the number of pods and of rules
// that use it, and the cache is bounded.
func TestCompiledOnce(t *testing.T) {
	e := New(Options{CacheSize: 2})
	first, err := e.compile(environment.StoredExpressions, "true")
	if err != nil {
		t.Fatal(err)
	}
	rules := []v1beta1.PlacementRule{{Name: "a", Expression: "true"}, {Name: "b", Expression: "true"}, {Name: "c", Expression: "false"}}
	for range 3 {
		e.Evaluate(t.Context(), rules, mlPod())
	}
	if again, _ := e.compile(environment.StoredExpressions, "true"); again != first {
		t.Error("the expression was compiled again: not served from the cache")
	}
	if n := e.cache.Len(); n != 2 {
		t.Errorf("%d compiled expressions cached, want 2", n)
	}
	e.Evaluate(t.Context(), []v1beta1.PlacementRule{{Name: "d", Expression: "1 == 1"}, {Name: "e", Expression: "2 == 2"}, {Name: "f", Expression: "3 == 3"}}, mlPod())
	if n := e.cache.Len(); n != 2 {
		t.Errorf("%d compiled expressions cached, want the bound, 2", n)
	}
}

// TestObject: what a rule sees of a pod, and that the pod is not changed.
func TestObject(t *testing.T) {
	pod := mlPod()
	before := pod.DeepCopy()
	obj, err := Object(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "trainer", "namespace": "batch-1", "labels": map[string]any{"team": "ml"}},
		"spec": map[string]any{
			"containers":   []any{map[string]any{"name": "train", "image": "registry.example/ml/trainer:1", "resources": map[string]any{}}},
			"nodeSelector": map[string]any{"disk": "ssd"},
		},
	}
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Errorf("Object (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, pod); diff != "" {
		t.Errorf("the pod was changed (-before +after):\n%s", diff)
	}
	if _, err := Object(nil); err == nil {
		t.Error("Object(nil) succeeded, want an error")
	}
}

// TestSampleCompiles: the rules of the sample the documentation shows are valid.
func TestSampleCompiles(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "samples", "clusterpodplacementconfig-placement-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cppc := &v1beta1.ClusterPodPlacementConfig{}
	if err := yaml.UnmarshalStrict(raw, cppc); err != nil {
		t.Fatal(err)
	}
	if len(cppc.Spec.PlacementRules) == 0 {
		t.Fatal("the sample has no placement rules")
	}
	if errs := newEvaluator().Validate(field.NewPath("spec", "placementRules"), cppc.Spec.PlacementRules, nil); len(errs) > 0 {
		t.Errorf("the sample's rules are refused: %v", errs)
	}
}
