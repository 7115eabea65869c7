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

package placement

import (
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// fuzzReader turns fuzzer bytes into choices; it returns zeros once the bytes run out.
type fuzzReader struct{ data []byte }

func (r *fuzzReader) next() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *fuzzReader) intn(n int) int { return int(r.next()) % n }

func pick[T any](r *fuzzReader, from ...T) T { return from[r.intn(len(from))] }

var (
	fuzzArchs = []string{"amd64", "arm64", "ppc64le", "s390x", "riscv64"}
	fuzzKeys  = []string{v1beta1.NodeArchLabel, v1beta1.NodeArchLabel, zoneLabel, "disk", "beta.kubernetes.io/arch"}
	fuzzOps   = []corev1.NodeSelectorOperator{
		corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
	}
	fuzzValues = []string{"amd64", "arm64", "ppc64le", "s390x", "a", "b", "1"}
)

func (r *fuzzReader) requirement(keys []string) corev1.NodeSelectorRequirement {
	req := corev1.NodeSelectorRequirement{Key: pick(r, keys...), Operator: pick(r, fuzzOps...)}
	for range r.intn(3) {
		req.Values = append(req.Values, pick(r, fuzzValues...))
	}
	return req
}

func (r *fuzzReader) term() corev1.NodeSelectorTerm {
	var t corev1.NodeSelectorTerm
	for range r.intn(4) {
		t.MatchExpressions = append(t.MatchExpressions, r.requirement(fuzzKeys))
	}
	for range r.intn(2) {
		t.MatchFields = append(t.MatchFields, r.requirement([]string{"metadata.name", v1beta1.NodeArchLabel}))
	}
	return t
}

func (r *fuzzReader) archSet() sets.Set[string] {
	s := sets.New[string]()
	mask := r.next()
	for i, a := range fuzzArchs {
		if mask&(1<<i) != 0 {
			s.Insert(a)
		}
	}
	return s
}

func (r *fuzzReader) podSpec() corev1.PodSpec {
	var spec corev1.PodSpec
	switch r.intn(4) {
	case 1:
		spec.NodeSelector = map[string]string{"disk": "ssd"}
	case 2:
		spec.NodeSelector = map[string]string{v1beta1.NodeArchLabel: pick(r, fuzzArchs...)}
	}
	switch r.intn(4) {
	case 0:
		return spec
	case 1:
		spec.Affinity = &corev1.Affinity{}
		return spec
	case 2:
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	default:
		spec.Affinity = &corev1.Affinity{
			NodeAffinity:    &corev1.NodeAffinity{},
			PodAntiAffinity: &corev1.PodAntiAffinity{},
		}
	}
	if r.intn(4) > 0 {
		required := &corev1.NodeSelector{}
		for range r.intn(5) {
			required.NodeSelectorTerms = append(required.NodeSelectorTerms, r.term())
		}
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = required
	}
	for range r.intn(4) {
		spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(
			spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: int32(r.intn(102)), Preference: r.term()})
	}
	return spec
}

func (r *fuzzReader) sources() []ScoringSource {
	var out []ScoringSource
	for i := range r.intn(4) {
		src := ScoringSource{Ref: SourceRef{Kind: KindPodPlacementConfig, Namespace: "ns", Name: strconv.Itoa(i)}}
		for range r.intn(6) {
			src.Platforms = append(src.Platforms, v1beta1.NodeAffinityScoringPlatformTerm{
				Architecture: pick(r, fuzzArchs...),
				Weight:       int32(r.intn(103)) - 1,
			})
		}
		out = append(out, src)
	}
	return out
}

// fuzzNodes are the nodes the semantic checks evaluate affinities against.
func fuzzNodes() []map[string]string {
	var nodes []map[string]string
	for _, arch := range fuzzArchs {
		for _, zone := range []string{"a", "b", ""} {
			n := map[string]string{v1beta1.NodeArchLabel: arch}
			if zone != "" {
				n[zoneLabel] = zone
				n["disk"] = "1"
			}
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// requirementMatches evaluates one requirement against node labels, as the scheduler does for
// the operators the fuzzer generates.
func requirementMatches(r corev1.NodeSelectorRequirement, labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return ok && slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !ok || !slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return ok
	case corev1.NodeSelectorOpDoesNotExist:
		return !ok
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !ok || len(r.Values) != 1 {
			return false
		}
		a, err1 := strconv.Atoi(v)
		b, err2 := strconv.Atoi(r.Values[0])
		if err1 != nil || err2 != nil {
			return false
		}
		return (r.Operator == corev1.NodeSelectorOpGt && a > b) || (r.Operator == corev1.NodeSelectorOpLt && a < b)
	}
	return false
}

// requiredMatches reports whether the required node affinity of spec admits a node with the
// given labels (named "node-1"): the terms are ORed, the requirements of a term ANDed, and an
// empty term matches nothing. A required selector without terms (invalid in the API) counts as
// absent, as in MergeRequiredArchitectures.
func requiredMatches(spec *corev1.PodSpec, labels map[string]string) bool {
	terms := requiredTerms(spec)
	if len(terms) == 0 {
		return true
	}
	fields := map[string]string{"metadata.name": "node-1"}
	for _, t := range terms {
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			continue
		}
		ok := true
		for _, r := range t.MatchExpressions {
			ok = ok && requirementMatches(r, labels)
		}
		for _, r := range t.MatchFields {
			ok = ok && requirementMatches(r, fields)
		}
		if ok {
			return true
		}
	}
	return false
}

func countArch(exprs []corev1.NodeSelectorRequirement) int {
	n := 0
	for _, e := range exprs {
		if isArchitectureRequirement(e) {
			n++
		}
	}
	return n
}

func FuzzMergeRequired(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 1, 2, 1, 2, 0, 0, 1, 0x03})
	f.Add([]byte{2, 1, 3, 3, 4, 2, 2, 0, 1, 1, 3, 1, 0, 0, 0x1f})
	f.Add([]byte{1, 3, 1, 4, 3, 0, 1, 5, 2, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 0x0a})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{data: data}
		input := r.podSpec()
		archs := r.archSet()
		before := input.DeepCopy()

		after := input // shallow: the merge must not write through shared pointers
		outcome := MergeRequiredArchitectures(&after, archs)
		if diff := cmp.Diff(before, &input); diff != "" {
			t.Fatalf("input memory written (-before +after):\n%s", diff)
		}

		switch outcome {
		case OutcomeUserPinned, OutcomeNoCommonArch:
			if diff := cmp.Diff(before, &after); diff != "" {
				t.Fatalf("outcome %q changed the spec (-before +after):\n%s", outcome, diff)
			}
			if (outcome == OutcomeUserPinned) != UserPinsArchitecture(before) {
				t.Fatalf("outcome %q disagrees with UserPinsArchitecture=%t", outcome, UserPinsArchitecture(before))
			}
			if outcome == OutcomeNoCommonArch && archs.Len() != 0 {
				t.Fatalf("no common arch with archs %v", sets.List(archs))
			}
			return
		case OutcomeArchSet:
		default:
			t.Fatalf("unexpected outcome %q", outcome)
		}

		if archs.Len() == 0 || NodeSelectorPinsArchitecture(before) {
			t.Fatalf("arch set with archs %v and nodeSelector %v", sets.List(archs), before.NodeSelector)
		}
		// Only the required node affinity changes.
		masked := after.DeepCopy()
		masked.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
		want := before.DeepCopy()
		if want.Affinity == nil {
			want.Affinity = &corev1.Affinity{}
		}
		if want.Affinity.NodeAffinity == nil {
			want.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		want.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
		if diff := cmp.Diff(want, masked); diff != "" {
			t.Fatalf("fields other than the required node affinity changed (-want +got):\n%s", diff)
		}

		oldTerms, newTerms := requiredTerms(before), requiredTerms(&after)
		archReq := ArchitectureRequirement(archs)
		if len(oldTerms) == 0 {
			if diff := cmp.Diff([]corev1.NodeSelectorTerm{term(archReq)}, newTerms); diff != "" {
				t.Fatalf("new required affinity (-want +got):\n%s", diff)
			}
		} else {
			if len(newTerms) != len(oldTerms) {
				t.Fatalf("term count changed from %d to %d", len(oldTerms), len(newTerms))
			}
			added := 0
			for i, old := range oldTerms {
				nt := newTerms[i]
				if diff := cmp.Diff(old.MatchFields, nt.MatchFields); diff != "" {
					t.Fatalf("term %d matchFields changed:\n%s", i, diff)
				}
				if len(nt.MatchExpressions) < len(old.MatchExpressions) {
					t.Fatalf("term %d lost expressions", i)
				}
				if diff := cmp.Diff(old.MatchExpressions, nt.MatchExpressions[:len(old.MatchExpressions)], cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("user expressions of term %d changed or reordered:\n%s", i, diff)
				}
				extra := nt.MatchExpressions[len(old.MatchExpressions):]
				switch {
				case len(extra) > 1:
					t.Fatalf("term %d got %d expressions added", i, len(extra))
				case len(extra) == 1:
					added++
					if !needsArchitecture(old) {
						t.Fatalf("term %d did not need the architecture but got %v", i, extra[0])
					}
					if diff := cmp.Diff(archReq, extra[0]); diff != "" {
						t.Fatalf("term %d added requirement (-want +got):\n%s", i, diff)
					}
				case needsArchitecture(old):
					t.Fatalf("term %d needed the architecture but got nothing", i)
				}
				if countArch(nt.MatchExpressions)-countArch(old.MatchExpressions) > 1 {
					t.Fatalf("term %d got more than one arch expression", i)
				}
			}
			if added == 0 {
				t.Fatal("arch set without any term patched")
			}
		}

		// Semantics: never widen the placement, and never narrow it beyond the architecture.
		for _, node := range fuzzNodes() {
			oldOK, newOK := requiredMatches(before, node), requiredMatches(&after, node)
			if newOK && !oldOK {
				t.Fatalf("node %v admitted only after the merge", node)
			}
			if archs.Has(node[v1beta1.NodeArchLabel]) && oldOK != newOK {
				t.Fatalf("compatible node %v: admitted before=%t after=%t", node, oldOK, newOK)
			}
		}

		// Idempotence.
		again := *after.DeepCopy()
		if second := MergeRequiredArchitectures(&again, archs); second == OutcomeArchSet {
			t.Fatalf("second merge returned %q", second)
		}
		if diff := cmp.Diff(&after, &again); diff != "" {
			t.Fatalf("second merge changed the spec:\n%s", diff)
		}
	})
}

func FuzzMergePreferred(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 3, 1, 2, 0, 0, 1, 0x03, 2, 3, 0, 50, 1, 20, 2, 0, 60})
	f.Add([]byte{1, 2, 3, 3, 1, 1, 1, 0, 3, 2, 1, 0, 0x0f, 3, 5, 1, 0, 2, 3, 200, 4, 101, 5, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{data: data}
		input := r.podSpec()
		compatible := r.archSet()
		sources := r.sources()
		before := input.DeepCopy()

		after := input
		result := MergePreferredArchitectures(&after, compatible, sources)
		if diff := cmp.Diff(before, &input); diff != "" {
			t.Fatalf("input memory written (-before +after):\n%s", diff)
		}

		total, skippedWhole := 0, 0
		for _, s := range sources {
			total += len(s.Platforms)
		}
		for _, ss := range result.SkippedSources {
			for _, s := range sources {
				if s.Ref == ss.Source {
					skippedWhole += len(s.Platforms)
				}
			}
		}
		if got := len(result.Applied) + len(result.Skipped) + skippedWhole; got != total {
			t.Fatalf("applied+skipped+skipped whole = %d, want %d proposals", got, total)
		}
		if PodPrefersArchitecture(before) && len(result.Applied) != 0 {
			t.Fatalf("applied %v over the user's own arch preference", result.Applied)
		}
		for _, ss := range result.SkippedSources {
			if ss.By.IsPod() != (ss.Reason == SkipPodPreference) || (ss.Reason != SkipPodPreference && ss.Reason != SkipHigherPriority) {
				t.Fatalf("skipped source %+v: reason and by disagree", ss)
			}
		}
		if len(result.Applied) == 0 {
			if diff := cmp.Diff(before, &after); diff != "" {
				t.Fatalf("nothing applied but the spec changed:\n%s", diff)
			}
			return
		}
		for _, a := range result.Applied {
			if a.Source != result.Applied[0].Source {
				t.Fatalf("terms from two sources applied: %v", result.Applied)
			}
		}

		// Only the preferred node affinity changes, and the user's terms are a kept prefix.
		var oldPreferred []corev1.PreferredSchedulingTerm
		if before.Affinity != nil && before.Affinity.NodeAffinity != nil {
			oldPreferred = before.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		}
		newPreferred := after.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		if len(newPreferred) != len(oldPreferred)+len(result.Applied) {
			t.Fatalf("%d preferred terms, want %d user + %d applied", len(newPreferred), len(oldPreferred), len(result.Applied))
		}
		if diff := cmp.Diff(oldPreferred, newPreferred[:len(oldPreferred)], cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("user preferred terms changed:\n%s", diff)
		}
		masked := after.DeepCopy()
		masked.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		want := before.DeepCopy()
		if want.Affinity == nil {
			want.Affinity = &corev1.Affinity{}
		}
		if want.Affinity.NodeAffinity == nil {
			want.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		want.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		if diff := cmp.Diff(want, masked); diff != "" {
			t.Fatalf("fields other than the preferred node affinity changed (-want +got):\n%s", diff)
		}

		seen := sets.New[string]()
		for i, p := range newPreferred[len(oldPreferred):] {
			applied := result.Applied[i]
			if diff := cmp.Diff(preferred(applied.Weight, archIn(applied.Architecture)), p); diff != "" {
				t.Fatalf("added term %d does not match %+v:\n%s", i, applied, diff)
			}
			switch arch := applied.Architecture; {
			case p.Weight < 1 || p.Weight > 100:
				t.Fatalf("added weight %d out of range", p.Weight)
			case !compatible.Has(arch):
				t.Fatalf("weight added for incompatible %s", arch)
			case seen.Has(arch):
				t.Fatalf("%s weighted twice", arch)
			}
			seen.Insert(applied.Architecture)
		}

		// Applying the same sources again adds nothing.
		again := *after.DeepCopy()
		if second := MergePreferredArchitectures(&again, compatible, sources); len(second.Applied) != 0 {
			t.Fatalf("second merge applied %v", second.Applied)
		}
	})
}

func FuzzMergeNoCommonArchitecture(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 1, 2, 1, 2, 0, 0, 1})
	f.Add([]byte{2, 1, 3, 3, 4, 2, 2, 0, 1, 1, 3, 1, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{data: data}
		input := r.podSpec()
		before := input.DeepCopy()
		after := input
		if got := MergeNoCommonArchitecture(&after); got != OutcomeNoCommonArch {
			t.Fatalf("outcome %q", got)
		}
		if diff := cmp.Diff(before, &input); diff != "" {
			t.Fatalf("input memory written (-before +after):\n%s", diff)
		}
		// No node is admitted any more, and existing terms only grew by appended expressions.
		for _, node := range fuzzNodes() {
			if requiredMatches(&after, node) {
				t.Fatalf("node %v still admitted", node)
			}
		}
		if oldTerms := requiredTerms(before); len(oldTerms) > 0 {
			newTerms := requiredTerms(&after)
			if len(newTerms) != len(oldTerms) {
				t.Fatalf("term count changed from %d to %d", len(oldTerms), len(newTerms))
			}
			for i, old := range oldTerms {
				if diff := cmp.Diff(old.MatchExpressions, newTerms[i].MatchExpressions[:len(old.MatchExpressions)], cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("expressions of term %d changed:\n%s", i, diff)
				}
				if diff := cmp.Diff(old.MatchFields, newTerms[i].MatchFields); diff != "" {
					t.Fatalf("fields of term %d changed:\n%s", i, diff)
				}
			}
		}
		// Idempotence.
		again := *after.DeepCopy()
		MergeNoCommonArchitecture(&again)
		if diff := cmp.Diff(&after, &again); diff != "" {
			t.Fatalf("second merge changed the spec:\n%s", diff)
		}
	})
}
