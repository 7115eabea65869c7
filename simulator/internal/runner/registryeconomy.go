package runner

import (
	"strconv"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// registryStats is the report's registry block for the counters of a pass: the economy of the
// images the operator had to inspect, answers by status, injected faults, and the requests by
// repository (what each image cost, compared across environments by simulator fidelity).
func registryStats(snap fakeregistry.Snapshot, pods []workload.Pod, catalog *fakeregistry.Catalog, auth fakeregistry.AuthMode) *report.RegistryStats {
	// The minimum counts each image the operator must inspect once:
	// distinct images (a tag and a digest reference of one image are one) of
	// the pods the webhook gates (nodeSelector-pinned pods are skipped). It
	// is a lower bound: an image first met by digest and later by tag needs
	// both looked up, and each credential identity is cached apart.
	var images []fakeregistry.Image
	for _, p := range pods {
		if p.NodeSelectorArch != "" {
			continue
		}
		for _, ref := range p.Images() {
			if im, err := catalog.Image(ref); err == nil {
				images = append(images, im)
			}
		}
	}
	g := registryEconomy(images, snap.Requests, auth)
	g.Statuses, g.Faults, g.Repositories = map[string]uint64{}, map[string]uint64{}, map[string]map[string]uint64{}
	for k, v := range snap.Statuses {
		g.Statuses[strconv.Itoa(k)] = v
	}
	for k, v := range snap.Faults {
		g.Faults[string(k)] = v
	}
	for rk, v := range snap.Repositories {
		if g.Repositories[rk.Repository] == nil {
			g.Repositories[rk.Repository] = map[string]uint64{}
		}
		g.Repositories[rk.Repository][string(rk.Kind)] = v
	}
	return g
}

// registryEconomy splits the registry requests of a pass into the minimum
// any client needs to learn the images' architectures and the overhead of
// the client's protocol, so that the scenario's expectation judges what the
// operator controls (each image read once) and the client's cost is shown
// beside it.
//
// The minimum is, per unique image, its manifest, plus the config blob of a
// single-platform manifest (the architecture is in the config), plus with
// bearer auth one token per repository (a pull token is scoped to one
// repository). The protocol overhead is every /v2/ ping (a client that knew
// the registry's auth scheme would not need one) and every token beyond the
// minimum: containers/image, which the operator uses, pings and fetches a
// token once per image it opens.
func registryEconomy(images []fakeregistry.Image, requests map[fakeregistry.RequestKind]uint64, auth fakeregistry.AuthMode) *report.RegistryStats {
	g := &report.RegistryStats{Requests: map[string]uint64{}}
	for k, v := range requests {
		g.Requests[string(k)] = v
		g.Total += v
	}
	seen, repos := map[string]bool{}, map[string]bool{}
	for _, im := range images {
		if seen[im.Repository+"@"+im.Digest] {
			continue
		}
		seen[im.Repository+"@"+im.Digest] = true
		repos[im.Repository] = true
		g.UniqueImages++
		g.MinimumRequests++ // the manifest
		if !im.Format.IsList() {
			g.MinimumRequests++ // the config blob
		}
	}
	if auth == fakeregistry.AuthBearer {
		g.MinimumTokens = len(repos)
		g.MinimumRequests += g.MinimumTokens
	}
	o := &g.ProtocolOverhead
	o.Pings = requests[fakeregistry.KindPing]
	if t := requests[fakeregistry.KindToken]; t > uint64(g.MinimumTokens) {
		o.ExtraTokens = t - uint64(g.MinimumTokens)
	}
	o.Total = o.Pings + o.ExtraTokens
	g.ContentRequests = g.Total - o.Total
	if g.MinimumRequests > 0 {
		g.PerMinimum = float64(g.ContentRequests) / float64(g.MinimumRequests)
		g.AllPerMinimum = float64(g.Total) / float64(g.MinimumRequests)
	}
	if g.UniqueImages > 0 {
		o.PerImage = float64(o.Total) / float64(g.UniqueImages)
	}
	return g
}
