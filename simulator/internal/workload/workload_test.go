package workload

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

const spec = `name: w
seed: 7
nodes:
  - {arch: amd64, count: 1}
  - {arch: s390x, count: 1}
registry:
  catalog:
    repositories:
      - name: bundle
        images: [{tags: [v1], format: oci-manifest, platforms: [linux/amd64], noBinaries: true}]
    generate:
      - seed: 1
        count: 40
        prefix: gen/app
        archSets:
          - {platforms: [linux/amd64], weight: 2}
          - {platforms: [linux/s390x], weight: 2}
          - {platforms: [linux/arm64], weight: 1}
          - {platforms: [linux/amd64, linux/s390x], weight: 1}
        formats: [{format: oci-index, weight: 1}, {format: docker-manifest, weight: 1}]
operator: {enabled: true}
workload:
  namespaces: 3
  pods: 500
  containers: {min: 1, max: 3}
  initContainers: {min: 0, max: 2}
  images: {popularity: zipf, zipfS: 1.2, digestShare: 0.2}
  ownArchAffinityShare: 0.1
  nodeSelectorShare: 0.1
  arrival: {mode: burst}
expectations: [{check: misplacedPods == 0, source: test}]
`

func load(t *testing.T, yaml string) *scenario.Loaded {
	t.Helper()
	l, err := scenario.Parse("w.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestGenerateIsDeterministicAndCompatible(t *testing.T) {
	l := load(t, spec)
	a := Generate(l.Scenario, l.Catalog)
	b := Generate(l.Scenario, l.Catalog)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("two plans of one scenario differ:\n%s", diff)
	}
	if a.Schedulable != len(a.Pods) {
		t.Errorf("schedulable = %d, want every one of %d pods (images drawn compatible)", a.Schedulable, len(a.Pods))
	}
	var pinned, selected, digests int
	for _, p := range a.Pods {
		if !p.Runs("amd64") && !p.Runs("s390x") {
			t.Fatalf("pod %d runs on no node architecture: %+v", p.Index, p)
		}
		if n := len(p.Containers); n < 1 || n > 3 {
			t.Errorf("pod %d has %d containers", p.Index, n)
		}
		if p.Namespace != p.Index%3 {
			t.Errorf("pod %d in namespace %d", p.Index, p.Namespace)
		}
		for _, arch := range []string{p.ArchAffinity, p.NodeSelectorArch} {
			if arch != "" && !p.Runs(arch) {
				t.Errorf("pod %d pins %s, which its images lack", p.Index, arch)
			}
		}
		if p.ArchAffinity != "" {
			pinned++
		}
		if p.NodeSelectorArch != "" {
			selected++
		}
		for _, ref := range p.Images() {
			if slices.Contains([]byte(ref), '@') {
				digests++
			}
			truth, err := l.Catalog.TrueArchitectures(ref)
			if err != nil {
				t.Fatal(err)
			}
			for _, arch := range p.Allowed {
				if !truth.Allows(arch) {
					t.Errorf("pod %d allows %s but %s lacks it", p.Index, arch, ref)
				}
			}
		}
	}
	// Shares are random draws: loose bounds around 10% of 500.
	for name, n := range map[string]int{"own affinity": pinned, "nodeSelector": selected} {
		if n < 25 || n > 80 {
			t.Errorf("%s pods = %d, want about 50", name, n)
		}
	}
	if digests == 0 {
		t.Error("no digest references despite digestShare 0.2")
	}
}

func TestGenerateUnique(t *testing.T) {
	l := load(t, `name: u
seed: 1
nodes: [{arch: amd64, count: 1}]
registry:
  catalog:
    generate:
      - {seed: 2, count: 30, prefix: gen/x, archSets: [{platforms: [linux/amd64], weight: 1}], formats: [{format: oci-index, weight: 1}]}
operator: {enabled: true}
workload:
  pods: 30
  images: {popularity: unique}
  arrival: {mode: burst}
expectations: [{check: misplacedPods == 0, source: test}]
`)
	plan := Generate(l.Scenario, l.Catalog)
	if got := len(plan.UniqueImages); got != 30 {
		t.Errorf("unique images = %d, want 30 (one new image per pod)", got)
	}
}

func TestPodObject(t *testing.T) {
	p := Pod{Index: 12, Namespace: 1, Containers: []string{"gen/a:v1"}, InitContainers: []string{"gen/b@sha256:00"},
		ArchAffinity: "arm64", PullSecret: true}
	l := load(t, spec)
	pod := p.Object(ObjectOptions{Host: "127.0.0.1:5000", Namespaces: []string{"a", "b"}, Labels: map[string]string{LabelRun: "r"},
		CPU: *l.Scenario.Workload.Requests.CPU, Memory: *l.Scenario.Workload.Requests.Memory})
	if pod.Name != "p-00012" || pod.Namespace != "b" {
		t.Errorf("name %s/%s", pod.Namespace, pod.Name)
	}
	if i, ok := PodIndex(pod.Name); !ok || i != 12 {
		t.Errorf("PodIndex(%q) = %d, %v", pod.Name, i, ok)
	}
	if got := pod.Spec.InitContainers[0].Image; got != "127.0.0.1:5000/gen/b@sha256:00" {
		t.Errorf("init image %q", got)
	}
	if got := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values; !slices.Equal(got, []string{"arm64"}) {
		t.Errorf("affinity values %v", got)
	}
	if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != PullSecretName {
		t.Errorf("pull secrets %v", pod.Spec.ImagePullSecrets)
	}
}

// TestHandwrittenAffinity: the handwritten pass gives a pod the affinity its
// images need unless the pod pins its architecture itself.
func TestHandwrittenAffinity(t *testing.T) {
	for name, tc := range map[string]struct {
		pod        Pod
		wantOp     corev1.NodeSelectorOperator
		wantValues []string
		// wantPreferred is the compatible set the preferences are asked for; nil: not asked.
		wantPreferred []string
	}{
		"images on two architectures": {pod: Pod{Allowed: []string{"amd64", "arm64"}}, wantOp: corev1.NodeSelectorOpIn, wantValues: []string{"amd64", "arm64"},
			wantPreferred: []string{"amd64", "arm64"}},
		"images sharing no architecture": {pod: Pod{}, wantOp: corev1.NodeSelectorOpDoesNotExist, wantPreferred: []string{}},
		"images without binaries":        {pod: Pod{AnyArch: true}},
		"the pod's own affinity is kept": {pod: Pod{Allowed: []string{"amd64", "arm64"}, ArchAffinity: "arm64"}, wantOp: corev1.NodeSelectorOpIn, wantValues: []string{"arm64"},
			wantPreferred: []string{"amd64", "arm64"}},
		"a pod pinned by nodeSelector too": {pod: Pod{Allowed: []string{"amd64"}, NodeSelectorArch: "amd64"}},
	} {
		t.Run(name, func(t *testing.T) {
			tc.pod.Containers = []string{"gen/a:v1"}
			var preferred []string
			pod := tc.pod.Object(ObjectOptions{Namespaces: []string{"a"}, HandwrittenAffinity: true,
				HandwrittenPreferences: func(_ *corev1.Pod, compatible []string) { preferred = append([]string{}, compatible...) }})
			if !slices.Equal(preferred, tc.wantPreferred) || (preferred == nil) != (tc.wantPreferred == nil) {
				t.Errorf("preferences asked for %v, want %v", preferred, tc.wantPreferred)
			}
			if tc.wantOp == "" {
				if pod.Spec.Affinity != nil {
					t.Fatalf("affinity %v, want none", pod.Spec.Affinity)
				}
				return
			}
			req := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
			if req.Key != corev1.LabelArchStable || req.Operator != tc.wantOp || !slices.Equal(req.Values, tc.wantValues) {
				t.Errorf("requirement %v, want %s %s %v", req, corev1.LabelArchStable, tc.wantOp, tc.wantValues)
			}
		})
	}
}

func TestArrivals(t *testing.T) {
	ms := time.Millisecond
	tests := map[string]struct {
		spec scenario.ArrivalSpec
		n    int
		want []time.Duration
	}{
		"burst": {spec: scenario.ArrivalSpec{Mode: scenario.ArrivalBurst}, n: 3, want: []time.Duration{0, 0, 0}},
		"rate":  {spec: scenario.ArrivalSpec{Mode: scenario.ArrivalRate, Rate: 4}, n: 3, want: []time.Duration{0, 250 * ms, 500 * ms}},
		"steps": {
			spec: scenario.ArrivalSpec{Mode: scenario.ArrivalSteps, Steps: []scenario.StepSpec{
				{Rate: 2, Duration: scenario.Duration(time.Second)}, {Rate: 10, Duration: scenario.Duration(time.Second)}}},
			n:    5,
			want: []time.Duration{0, 500 * ms, 1000 * ms, 1100 * ms, 1200 * ms},
		},
		"last step lasts": {
			spec: scenario.ArrivalSpec{Mode: scenario.ArrivalSteps, Steps: []scenario.StepSpec{{Rate: 1, Duration: scenario.Duration(time.Second)}}},
			n:    3,
			want: []time.Duration{0, time.Second, 2 * time.Second},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Arrivals(tc.spec, tc.n)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAttack checks the attacker's pods: indexed after the workload's, in
// the namespace after the workload's, each kind in about its share, a tag of
// its own per container (catalog images aside), the padding annotation, the
// hanging host for hang pods; and that adding an attacker leaves the
// workload's pods as they were.
func TestAttack(t *testing.T) {
	const attacker = `attacker:
  pods: 400
  rate: 2
  attacks:
    - {weight: 1, images: hang, containers: 3}
    - {weight: 1, images: tarpit}
    - {weight: 1, images: missing, containers: 5}
    - {weight: 1, images: catalog, annotationBytes: 1000}
`
	plain := load(t, spec)
	l := load(t, spec+attacker)
	plan := Generate(l.Scenario, l.Catalog)
	if diff := cmp.Diff(Generate(plain.Scenario, plain.Catalog).Pods, plan.Pods); diff != "" {
		t.Fatalf("the attacker changed the workload's pods (-without +with):\n%s", diff)
	}
	if len(plan.Attack) != 400 {
		t.Fatalf("%d attack pods, want 400", len(plan.Attack))
	}
	kinds := map[scenario.AttackImages]int{}
	refs := map[string]bool{}
	o := ObjectOptions{Host: "reg:5000", HangHost: "127.0.0.1:1", Namespaces: []string{"a", "b", "c", "attacker"}}
	for k, p := range plan.Attack {
		kinds[p.Attack]++
		if p.Index != 500+k || p.Namespace != 3 || !p.AnyArch {
			t.Fatalf("attack pod %d: index %d namespace %d anyArch %v, want %d, 3, true", k, p.Index, p.Namespace, p.AnyArch, 500+k)
		}
		pod := p.Object(o)
		if pod.Namespace != "attacker" {
			t.Errorf("pod %s in namespace %s", pod.Name, pod.Namespace)
		}
		for _, c := range pod.Spec.Containers {
			switch p.Attack {
			case scenario.AttackImagesHang:
				if !strings.HasPrefix(c.Image, "127.0.0.1:1/"+HangRepository+":") {
					t.Errorf("hang image %s is not on the hanging host", c.Image)
				}
			case scenario.AttackImagesTarpit:
				if !strings.HasPrefix(c.Image, "reg:5000/"+TarpitRepository+":") {
					t.Errorf("tarpit image %s is not in the tarpit repository", c.Image)
				}
			case scenario.AttackImagesMissing:
				if _, err := l.Catalog.Image(strings.TrimPrefix(c.Image, "reg:5000/")); err == nil {
					t.Errorf("missing image %s is in the catalog", c.Image)
				}
			case scenario.AttackImagesCatalog:
				if _, err := l.Catalog.Image(strings.TrimPrefix(c.Image, "reg:5000/")); err != nil {
					t.Errorf("catalog image %s: %v", c.Image, err)
				}
				if len(pod.Annotations[PaddingAnnotation]) != 1000 {
					t.Errorf("pod %s padding %d bytes, want 1000", pod.Name, len(pod.Annotations[PaddingAnnotation]))
				}
				continue
			}
			if refs[c.Image] {
				t.Errorf("image %s named twice: a cache would answer for it", c.Image)
			}
			refs[c.Image] = true
		}
	}
	for _, kind := range []scenario.AttackImages{scenario.AttackImagesHang, scenario.AttackImagesTarpit, scenario.AttackImagesMissing, scenario.AttackImagesCatalog} {
		if n := kinds[kind]; n < 70 || n > 130 {
			t.Errorf("%d pods of kind %s, want about 100 of 400", n, kind)
		}
	}
}
