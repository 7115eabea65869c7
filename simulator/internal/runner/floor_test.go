package runner

import (
	"path/filepath"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// TestRegistryModelDelay: the floor's read of an image costs the registry model's time for its
// manifest, plus its config blob when the manifest is single-platform, the same in every run.
func TestRegistryModelDelay(t *testing.T) {
	loaded, err := scenario.Load(filepath.Join("..", "..", "..", "scenarios", "10k-pods.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	images := loaded.Catalog.Images()
	fixed := scenario.Duration(3 * time.Millisecond)
	loaded.Scenario.Registry.Latency = map[string]scenario.LatencySpec{"*": {Fixed: &fixed}}
	r := &run{opts: Options{Scenario: loaded}, s: loaded.Scenario}
	delay := r.registryModelDelay()
	var lists, singles int
	for _, im := range images {
		ref := im.Repository + ":" + im.Tags[0]
		want := 6 * time.Millisecond
		if im.Format.IsList() {
			want, lists = 3*time.Millisecond, lists+1
		} else {
			singles++
		}
		if got := delay(ref); got != want {
			t.Errorf("delay(%s) (%s) = %s, want %s", ref, im.Format, got, want)
		}
	}
	if lists == 0 || singles == 0 {
		t.Fatalf("the catalog has %d lists and %d single manifests; the test needs both", lists, singles)
	}

	loaded.Scenario.Registry.Latency = map[string]scenario.LatencySpec{"*": {P50: ptr.To(scenario.Duration(3 * time.Millisecond)), P99: ptr.To(scenario.Duration(30 * time.Millisecond))}}
	ref := images[1].Repository + ":" + images[1].Tags[0]
	first, again := r.registryModelDelay()(ref), r.registryModelDelay()(ref)
	if first != again || first <= 0 {
		t.Errorf("log-normal delay of %s: %s then %s; want one positive value", ref, first, again)
	}
}
