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

// Package placementrules compiles and evaluates the placement rules of the
// ClusterPodPlacementConfig (spec.placementRules): CEL expressions over a pod, compiled as the
// apiserver compiles the expressions of an admission policy (k8s.io/apiserver's base
// environment at the compatibility version, the Kubernetes CEL libraries, the variable object
// declared dyn) and evaluated with the apiserver's runtime cost limits. Which architectures a
// matched rule leaves the pod, and where its weights rank, is decided in internal/placement,
// which receives the matched rules: nothing here knows about placement.
//
// Pods are their tenants' to write, so evaluation is bounded: each evaluation by the apiserver's
// per-call cost limit (about a tenth of a second), the rules of one pod together by the
// apiserver's per-binding budget, and both by the caller's context. A rule that cannot be
// evaluated does not match, and the evaluation says why; nothing here panics on a pod.
package placementrules

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	lru "github.com/hashicorp/golang-lru/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// ObjectVariable is the name of the variable a rule's expression reads the pod from, as in an
// admission policy.
const ObjectVariable = "object"

// DefaultCacheSize is how many compiled expressions an Evaluator keeps by default: a
// ClusterPodPlacementConfig has at most 16 rules, so this holds many generations of them.
const DefaultCacheSize = 256

// Options configure an Evaluator. Zero fields take the defaults.
type Options struct {
	// CompatibilityVersion is the Kubernetes version whose CEL environment new expressions are
	// compiled against (environment.NewExpressions); environment.DefaultCompatibilityVersion()
	// when nil, as in the apiserver this operator's libraries come from. Stored expressions are
	// compiled and evaluated in the environment of every known version
	// (environment.StoredExpressions), as the apiserver evaluates persisted expressions.
	CompatibilityVersion *version.Version
	// CacheSize bounds the compiled expressions kept (least recently used first out);
	// DefaultCacheSize when zero.
	CacheSize int
}

// Evaluator compiles placement rules (cached by expression, bounded) and evaluates them for
// pods. It is safe for concurrent use.
type Evaluator struct {
	envs  *environment.EnvSet
	cache *lru.Cache[cacheKey, compiled]
}

// cacheKey names a compiled expression: the same text compiles differently in the two
// environments.
type cacheKey struct {
	env        environment.Type
	expression string
}

// compiled is an expression's program, or why it has none.
type compiled struct {
	program cel.Program
	err     error
}

// New returns an Evaluator. The CEL environment depends on no input, so failing to build it is
// a programming error that every test of this package catches: New panics then, as the
// apiserver does when it builds its admission environments.
func New(opts Options) *Evaluator {
	ver := opts.CompatibilityVersion
	if ver == nil {
		ver = environment.DefaultCompatibilityVersion()
	}
	envs, err := environment.MustBaseEnvSet(ver).Extend(environment.VersionedOptions{
		// As for admission policies: always present.
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable(ObjectVariable, cel.DynType)},
	})
	if err != nil {
		panic(fmt.Sprintf("placementrules: building the CEL environment: %v", err))
	}
	size := opts.CacheSize
	if size <= 0 {
		size = DefaultCacheSize
	}
	cache, err := lru.New[cacheKey, compiled](size)
	if err != nil {
		panic(fmt.Sprintf("placementrules: %v", err)) // only for a size <= 0
	}
	return &Evaluator{envs: envs, cache: cache}
}

// Validate compiles the rules of a ClusterPodPlacementConfig being written (path is its
// spec.placementRules) and returns, per rule, why its expression is refused: a compilation
// error (CEL's message), a result that is not a bool, or an estimated cost that is certain to
// exceed the limit of one evaluation. An expression new to the object is compiled in the
// environment of the compatibility version; one that old (the rules before an update, nil on
// create) already had, in the environment of every known version, as the apiserver validates
// the expressions of its own objects: a stored expression stays valid across upgrades and
// downgrades of the operator.
func (e *Evaluator) Validate(path *field.Path, rules, old []v1beta1.PlacementRule) field.ErrorList {
	stored := make(map[string]bool, len(old))
	for _, r := range old {
		stored[r.Expression] = true
	}
	var errs field.ErrorList
	for i, r := range rules {
		env := environment.NewExpressions
		if stored[r.Expression] {
			env = environment.StoredExpressions
		}
		if _, err := e.compile(env, r.Expression); err != nil {
			errs = append(errs, field.Invalid(path.Index(i).Child("expression"), r.Expression, err.Error()))
		}
	}
	return errs
}

// compile returns the program of expression in env, from the cache when it was compiled before
// (compilation errors are cached too: a stored expression that does not compile costs one
// compilation, not one per pod).
func (e *Evaluator) compile(env environment.Type, expression string) (cel.Program, error) {
	key := cacheKey{env: env, expression: expression}
	if c, ok := e.cache.Get(key); ok {
		return c.program, c.err
	}
	program, err := e.compileUncached(env, expression)
	e.cache.Add(key, compiled{program: program, err: err})
	return program, err
}

func (e *Evaluator) compileUncached(envType environment.Type, expression string) (cel.Program, error) {
	env, err := e.envs.Env(envType)
	if err != nil {
		return nil, err
	}
	ast, issues := env.Compile(expression)
	if issues != nil && issues.Err() != nil {
		return nil, errors.New(issues.String())
	}
	if out := ast.OutputType(); !out.IsExactType(cel.BoolType) {
		msg := fmt.Sprintf("must evaluate to bool but got %v", out)
		if out.IsExactType(cel.DynType) {
			// The apiserver refuses such a match condition too.
			msg += " (the pod's fields are dyn: compare them, e.g. object.spec.?hostNetwork.orValue(false) == true)"
		}
		return nil, errors.New(msg)
	}
	// The estimate's maximum is unbounded for almost every useful rule: object is dyn, so the
	// size of anything read from the pod is unknown (the apiserver does not estimate the cost of
	// admission-policy expressions either, and relies on the runtime limit). Its minimum is
	// what every evaluation costs at least: above the per-call limit, no evaluation can finish.
	if est, err := env.EstimateCost(ast, &library.CostEstimator{}); err == nil && est.Min > celconfig.PerCallLimit {
		return nil, fmt.Errorf("every evaluation costs at least %d, more than the limit of one evaluation (%d): it could never finish",
			est.Min, uint64(celconfig.PerCallLimit))
	}
	program, err := env.Program(ast,
		cel.InterruptCheckFrequency(celconfig.CheckFrequency),
		// The base environment sets the same limit; it is stated here, where it is relied on.
		cel.CostLimit(celconfig.PerCallLimit),
	)
	if err != nil {
		return nil, fmt.Errorf("building the program: %w", err)
	}
	return program, nil
}

// Result is what one rule said about one pod: the "result" label of
// archgate_placement_rule_evaluations_total.
type Result string

// Results of a rule's evaluation.
const (
	// Matched: the expression returned true.
	Matched Result = "matched"
	// Unmatched: the expression returned false.
	Unmatched Result = "unmatched"
	// Failed: the expression could not be evaluated (or compiled); the rule does not match.
	Failed Result = "error"
)

// Evaluation is the result of one rule for one pod.
type Evaluation struct {
	// Rule is the rule evaluated.
	Rule v1beta1.PlacementRule
	// Result is Matched, Unmatched or Failed.
	Result Result
	// Err says why the rule could not be evaluated (Result Failed), in CEL's words.
	Err error
}

// Evaluations are the results of a ClusterPodPlacementConfig's rules for one pod, in the rules'
// order.
type Evaluations []Evaluation

// Matched returns the rules that matched, in order: what placement.Decide applies.
func (es Evaluations) Matched() []v1beta1.PlacementRule {
	var out []v1beta1.PlacementRule
	for _, e := range es {
		if e.Result == Matched {
			out = append(out, e.Rule)
		}
	}
	return out
}

// Failed returns the evaluations that failed, in order.
func (es Evaluations) Failed() []Evaluation {
	var out []Evaluation
	for _, e := range es {
		if e.Result == Failed {
			out = append(out, e)
		}
	}
	return out
}

// errOutOfBudget ends the evaluation of a pod's remaining rules.
var errOutOfBudget = fmt.Errorf("out of the cost budget of one pod's rules (%d): this rule and the rules after it were not evaluated",
	int64(celconfig.RuntimeCELCostBudget))

// Evaluate evaluates rules, in order, for pod. Each evaluation is bounded by the per-call cost
// limit, all of them together by the apiserver's runtime budget of one policy binding
// (celconfig.RuntimeCELCostBudget: once spent, the remaining rules fail), and by ctx. A rule
// that cannot be compiled or evaluated is Failed; it never matches. No rules: nil, and the pod
// is not even converted.
func (e *Evaluator) Evaluate(ctx context.Context, rules []v1beta1.PlacementRule, pod *corev1.Pod) Evaluations {
	if len(rules) == 0 {
		return nil
	}
	out := make(Evaluations, len(rules))
	for i, r := range rules {
		out[i] = Evaluation{Rule: r, Result: Failed}
	}
	object, err := Object(pod)
	if err != nil {
		for i := range out {
			out[i].Err = fmt.Errorf("converting the pod: %w", err)
		}
		return out
	}
	activation, err := cel.NewActivation(map[string]any{ObjectVariable: object})
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	budget := int64(celconfig.RuntimeCELCostBudget)
	for i := range out {
		if budget < 0 {
			out[i].Err = errOutOfBudget
			continue
		}
		var matched bool
		matched, budget, out[i].Err = e.evaluate(ctx, out[i].Rule.Expression, activation, budget)
		switch {
		case out[i].Err != nil:
		case matched:
			out[i].Result = Matched
		default:
			out[i].Result = Unmatched
		}
	}
	return out
}

// evaluate runs one expression and returns its result and the budget left; a negative budget
// ends the pod's evaluation (the apiserver's rule: a cost it cannot account for, or one above
// the budget, stops every further expression).
func (e *Evaluator) evaluate(ctx context.Context, expression string, activation any, budget int64) (bool, int64, error) {
	program, err := e.compile(environment.StoredExpressions, expression)
	if err != nil {
		return false, budget, fmt.Errorf("compiling: %w", err)
	}
	val, details, err := program.ContextEval(ctx, activation)
	if details == nil || details.ActualCost() == nil {
		return false, -1, errors.Join(errors.New("the cost of the evaluation is unknown"), err)
	}
	cost := *details.ActualCost()
	if cost > math.MaxInt64 || int64(cost) > budget {
		return false, -1, errOutOfBudget
	}
	budget -= int64(cost)
	if err != nil {
		return false, budget, err
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, budget, fmt.Errorf("returned %s, not a bool", val.Type())
	}
	return bool(b), budget, nil
}

// Object returns the value of a rule's variable object for pod: its apiVersion, kind, metadata
// without managedFields (large, written by the apiserver, and not final at admission) and spec,
// as unstructured JSON values. Status is left out: a pod is placed before it has one.
func Object(pod *corev1.Pod) (map[string]any, error) {
	if pod == nil {
		return nil, errors.New("no pod")
	}
	meta := pod.ObjectMeta
	meta.ManagedFields = nil
	metadata, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&meta)
	if err != nil {
		return nil, err
	}
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pod.Spec)
	if err != nil {
		return nil, err
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}, nil
}
