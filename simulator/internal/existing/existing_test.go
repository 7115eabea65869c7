package existing

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/fakeregistry/strictyaml"
	"github.com/archgate/archgate/simulator/internal/fakenodes"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

func TestConfine(t *testing.T) {
	onRun := corev1.NodeSelectorRequirement{Key: RunLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}
	arch := func(v ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: v}
	}
	required := func(terms ...[]corev1.NodeSelectorRequirement) *corev1.Affinity {
		ns := &corev1.NodeSelector{}
		for _, t := range terms {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ns}}
	}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 5, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{arch("arm64")}}}}
	for _, tc := range []struct {
		name string
		in   *corev1.Affinity
		want *corev1.Affinity
	}{
		{"no affinity: one term with the run", nil, required([]corev1.NodeSelectorRequirement{onRun})},
		{"one arch term: the run ANDed in", required([]corev1.NodeSelectorRequirement{arch("amd64")}),
			required([]corev1.NodeSelectorRequirement{arch("amd64"), onRun})},
		{"two ORed terms: the run in each", required([]corev1.NodeSelectorRequirement{arch("amd64")}, []corev1.NodeSelectorRequirement{arch("s390x")}),
			required([]corev1.NodeSelectorRequirement{arch("amd64"), onRun}, []corev1.NodeSelectorRequirement{arch("s390x"), onRun})},
		{"preferred only: kept, a required term added",
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}},
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred,
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{onRun}}}}}}},
		{"pod affinity only: node affinity added beside it",
			&corev1.Affinity{PodAffinity: &corev1.PodAffinity{}},
			&corev1.Affinity{PodAffinity: &corev1.PodAffinity{}, NodeAffinity: required([]corev1.NodeSelectorRequirement{onRun}).NodeAffinity}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: tc.in, NodeSelector: map[string]string{corev1.LabelArchStable: "amd64"}}}
			Confine(pod, "r1")
			if !reflect.DeepEqual(pod.Spec.Affinity, tc.want) {
				t.Errorf("affinity\n got %+v\nwant %+v", pod.Spec.Affinity, tc.want)
			}
			wantTol := []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
			if !reflect.DeepEqual(pod.Spec.Tolerations, wantTol) {
				t.Errorf("tolerations %+v, want %+v", pod.Spec.Tolerations, wantTol)
			}
			if pod.Spec.NodeSelector[corev1.LabelArchStable] != "amd64" {
				t.Errorf("nodeSelector changed: %v", pod.Spec.NodeSelector)
			}
		})
	}
}

func TestUnsupported(t *testing.T) {
	d := scenario.Duration(time.Second)
	for _, tc := range []struct {
		name   string
		change func(s *scenario.Scenario)
		offer  Offer
		want   []string // paths, in order; nil: accepted
	}{
		{"plain scenario", func(*scenario.Scenario) {}, Offer{}, nil},
		{"registry auth with credentials", func(s *scenario.Scenario) { s.Registry.Auth = &scenario.AuthSpec{Mode: "bearer"} },
			Offer{RegistryCredentials: true}, nil},
		{"registry auth without credentials", func(s *scenario.Scenario) { s.Registry.Auth = &scenario.AuthSpec{Mode: "bearer"} },
			Offer{}, []string{"registry.auth.mode"}},
		{"registry faults", func(s *scenario.Scenario) {
			s.Registry.Latency = map[string]scenario.LatencySpec{"*": {Fixed: &d}, "blob_get": {Fixed: &d}}
			s.Registry.Errors = &scenario.ErrorRatesSpec{ServerErrorRate: 0.1}
		}, Offer{}, []string{`registry.latency["*"]`, `registry.latency["blob_get"]`, "registry.errors"}},
		{"plain-HTTP registry", func(s *scenario.Scenario) { s.Registry.TLS = ptr.To(false) }, Offer{}, []string{"registry.tls"}},
		{"in-process components", func(s *scenario.Scenario) {
			s.Operator.Mode = scenario.OperatorModeDirect
			s.Operator.FailOpenGracePeriod = d
			s.Operator.Namespace = "ops"
		}, Offer{}, []string{"operator.mode", "operator.namespace", "operator.failOpenGracePeriod"}},
		{"the deploy namespace", func(s *scenario.Scenario) { s.Operator.Namespace = DeployNamespace }, Offer{}, nil},
		{"embedded scheduler, background, kubelet", func(s *scenario.Scenario) {
			s.Scheduler = scenario.SchedulerSpec{PercentageOfNodesToScore: 50, DisableEvents: true}
			s.Background = &scenario.BackgroundSpec{CPUShare: 0.5}
			s.Kubelet.ExecFormatErrors = true
		}, Offer{}, []string{"scheduler.percentageOfNodesToScore", "scheduler.disableEvents", "background.cpuShare", "kubelet.execFormatErrors"}},
		{"timeline events", func(s *scenario.Scenario) {
			s.Timeline = []scenario.Event{{At: d, RegistryOutage: &scenario.OutageEvent{}}, {At: d, ControllerRestart: &scenario.RestartEvent{}}}
		}, Offer{}, []string{"timeline[0].registryOutage", "timeline[1].controllerRestart"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scenario.Scenario{Registry: scenario.RegistrySpec{TLS: ptr.To(true)}}
			tc.change(s)
			err := Unsupported("s.yaml", s, tc.offer)
			var got []string
			for _, e := range strictyaml.FieldErrors(err) {
				got = append(got, e.Path)
				if e.File != "s.yaml" || e.Value == "" || !strings.Contains(e.Reason, "not supported against an existing cluster") {
					t.Errorf("error %q lacks the file, the value or the reason", e)
				}
			}
			if err != nil && len(got) == 0 {
				t.Fatalf("error without field errors: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("refused %v, want %v (error: %v)", got, tc.want, err)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	node := func(name string, labels, annotations map[string]string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	}
	kwok := map[string]string{KwokAnnotation: KwokValue}
	nodes := []corev1.Node{
		node("realnode-amd64", nil, nil),
		node("kwok-arm64", nil, kwok),
		node("sim-r1-a-0", map[string]string{RunLabel: "r1"}, kwok),
		node("sim-r1-a-1", map[string]string{RunLabel: "r1"}, kwok),
		node("sim-r0-a-0", map[string]string{RunLabel: "r0"}, kwok),
	}
	for _, tc := range []struct {
		name                  string
		d                     Description
		real, fake, otherFake int
		realParts             []string // substrings of Real, in order
	}{
		{"operator installed by the run", Description{RunID: "r1", Nodes: nodes, Operator: true, Installed: true, Image: "img:1", Registry: "reg:5001"},
			1, 2, 2, []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager", "image img:1, installed from deploy/ by the run", "registry reg:5001"}},
		{"operator found installed", Description{RunID: "r1", Nodes: nodes, Operator: true, Image: "img:1", Registry: "reg:5001", RegistryAuth: "bearer"},
			1, 2, 2, []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager", "found installed, left in place", "registry reg:5001"}},
		{"no operator", Description{RunID: "r0", Nodes: nodes},
			1, 1, 3, []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.d.Server, tc.d.ServerVersion = "https://127.0.0.1:1", "v1.37.1"
			c := Describe(tc.d)
			if c.RealNodes != tc.real || c.FakeNodes != tc.fake || c.OtherFakeNodes != tc.otherFake {
				t.Errorf("nodes real %d, fake %d, other fake %d; want %d, %d, %d", c.RealNodes, c.FakeNodes, c.OtherFakeNodes, tc.real, tc.fake, tc.otherFake)
			}
			if c.Server != "https://127.0.0.1:1" || c.ServerVersion != "v1.37.1" || c.RunID != tc.d.RunID {
				t.Errorf("identity %q %q %q", c.Server, c.ServerVersion, c.RunID)
			}
			if len(c.Real) != len(tc.realParts) {
				t.Fatalf("real parts %q, want %d", c.Real, len(tc.realParts))
			}
			for i, want := range tc.realParts {
				if !strings.Contains(c.Real[i], want) {
					t.Errorf("real[%d] = %q, want it to say %q", i, c.Real[i], want)
				}
			}
			if !strings.Contains(strings.Join(c.Simulated, ";"), "kwok") || len(c.NotAvailable) != 3 ||
				strings.Contains(strings.Join(c.Simulated, ";"), "registry.auth") != (tc.d.RegistryAuth != "") {
				t.Errorf("simulated %q, not available %q", c.Simulated, c.NotAvailable)
			}
		})
	}
}

func TestKwokNode(t *testing.T) {
	pool := fakenodes.DefaultPool("sim-r1-arm64", "arm64", 2)
	n := KwokNode(pool, 1, "r1")
	if n.Name != "sim-r1-arm64-1" || n.Labels[RunLabel] != "r1" || n.Labels[corev1.LabelArchStable] != "arm64" || !IsKwok(n) {
		t.Errorf("node %s labels %v annotations %v", n.Name, n.Labels, n.Annotations)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != KwokAnnotation || n.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("taints %v", n.Spec.Taints)
	}
	if IsReady(n) {
		t.Error("a node the run creates must not claim Ready before kwok makes it so")
	}
	if _, ok := n.Status.Allocatable[corev1.ResourcePods]; !ok {
		t.Errorf("allocatable %v", n.Status.Allocatable)
	}
}

func TestMergeCatalogs(t *testing.T) {
	gen := func(prefix string, seed uint64) fakeregistry.GenerateSpec {
		return fakeregistry.GenerateSpec{Seed: seed, Count: 5, Prefix: prefix, Attestations: 0.5,
			ArchSets: []fakeregistry.WeightedArchSet{{Platforms: []string{"linux/amd64", "linux/arm64"}, Weight: 1}, {Platforms: []string{"linux/s390x"}, Weight: 1}},
			Formats:  []fakeregistry.WeightedFormat{{Format: fakeregistry.FormatOCIIndex, Weight: 1}, {Format: fakeregistry.FormatOCIManifest, Weight: 1}}}
	}
	a := fakeregistry.CatalogSpec{Repositories: []fakeregistry.RepositorySpec{{Name: "library/multi", Images: []fakeregistry.ImageSpec{
		{Tags: []string{"latest"}, Format: fakeregistry.FormatOCIIndex, Platforms: []string{"linux/amd64", "linux/arm64"}, Attestations: true}}}},
		Generate: []fakeregistry.GenerateSpec{gen("gen/app", 1)}}
	b := fakeregistry.CatalogSpec{Generate: []fakeregistry.GenerateSpec{gen("apps/svc", 2)}}
	merged, err := MergeCatalogs([]string{"a", "b"}, []fakeregistry.CatalogSpec{a, b})
	if err != nil {
		t.Fatal(err)
	}
	all, err := fakeregistry.NewCatalog(merged)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []fakeregistry.CatalogSpec{a, b} {
		own, err := fakeregistry.NewCatalog(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range own.Images() {
			ref := im.Repository + ":" + im.Tags[0]
			got, err := all.Image(ref)
			if err != nil || got.Digest != im.Digest || !reflect.DeepEqual(got.Arches, im.Arches) {
				t.Errorf("%s: merged digest %s arches %v (err %v), scenario's own %s %v", ref, got.Digest, got.Arches, err, im.Digest, im.Arches)
			}
		}
	}
	if _, err := MergeCatalogs([]string{"a", "a again"}, []fakeregistry.CatalogSpec{a, a}); err == nil {
		t.Error("two scenarios with the same repositories merged without an error")
	}
	layouts := fakeregistry.CatalogSpec{Layouts: []fakeregistry.LayoutSpec{{Repository: "x", Path: "dir"}}}
	if _, err := MergeCatalogs([]string{"l"}, []fakeregistry.CatalogSpec{layouts}); err == nil || !strings.Contains(err.Error(), "layouts") {
		t.Errorf("layouts: %v", err)
	}
}
