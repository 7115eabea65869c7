package inspect

import (
	"fmt"
	"testing"
)

// BenchmarkRegistryInspector measures what the controller spends on the first inspection of an
// image over TLS from a registry it already reached: registries.conf, the kept connection,
// challenge and transport, the manifest read and its parsing. Each operation inspects a
// different image index (cycling through 64) so that no answer is cached; the registry is
// in-process and answers at once, so the time per operation is the inspector's CPU (both sides
// of the connection counted), not the network's.
func BenchmarkRegistryInspector(b *testing.B) {
	reg := newTestRegistry(b)
	const images = 64
	refs := make([]string, images)
	for i := range refs {
		reg.pushIndex(fmt.Sprintf("apps/svc%d:1", i), testIndex(b, formatOCI,
			indexEntry{os: "linux", arch: "amd64"}, indexEntry{os: "linux", arch: "arm64"}))
		refs[i] = fmt.Sprintf("%s/apps/svc%d:1", reg.host, i)
	}
	cfg := newPodmanConfig(b, "")
	cfg.trust(b, reg)
	insp := mustInspector(b, cfg.options())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := insp.Architectures(b.Context(), refs[i%images], nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
