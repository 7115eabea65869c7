package inspect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archgate/archgate/operator/internal/mirrorsets"
)

// TestRegistryInspectorHonoursMirrorSets: the drop-in the operator renders from the cluster's
// ImageDigestMirrorSet and ImageTagMirrorSet objects (mounted as the controller's
// --registries-conf-dir) sends an inspection where CRI-O would pull: a digest mirror serves
// pulls by digest and is not asked for tags, a tag mirror the opposite, and a source behind
// NeverContactSource is never contacted.
func TestRegistryInspectorHonoursMirrorSets(t *testing.T) {
	tests := map[string]struct {
		kind   string
		policy string
		// byDigest inspects repo@digest, else repo:1.
		byDigest bool
		// wantMirror: the mirror answers (else the source does).
		wantMirror bool
		// wantSourceUntouched: the mirror lacks the image, the inspection fails, and the
		// source, which has it, gets no request at all.
		wantSourceUntouched bool
		// wantBlocked: no mirror applies to a blocked source: the inspection fails at once
		// (ReasonBlocked, as CRI-O's pull would fail), no registry asked.
		wantBlocked bool
	}{
		"digest mirror, by digest":                       {kind: mirrorsets.DigestKind, byDigest: true, wantMirror: true},
		"digest mirror, by tag: the mirror is not asked": {kind: mirrorsets.DigestKind},
		"tag mirror, by tag":                             {kind: mirrorsets.TagKind, wantMirror: true},
		"tag mirror, by digest: the mirror is not asked": {kind: mirrorsets.TagKind, byDigest: true},
		"NeverContactSource, by digest": {kind: mirrorsets.DigestKind, policy: mirrorsets.NeverContactSource, byDigest: true,
			wantSourceUntouched: true},
		"NeverContactSource, by tag: blocked at once, no request": {kind: mirrorsets.DigestKind, policy: mirrorsets.NeverContactSource,
			wantBlocked: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			source, mirror := newTestRegistry(t), newTestRegistry(t)
			// The mirror holds a different image under the same tag, so the answer shows who
			// served it; the digest is the mirror's, and the source holds it too, so a pull by
			// digest succeeds wherever it goes.
			mirrored := testIndex(t, formatOCI, indexEntry{os: "linux", arch: "arm64"}, indexEntry{os: "linux", arch: "s390x"})
			digest := mirror.pushIndex("mirror/app:1", mirrored)
			source.pushIndex("team/app:1", testIndex(t, formatOCI, indexEntry{os: "linux", arch: "amd64"}))
			source.pushIndex("team/app:digested", mirrored) // pushes bypass the counters
			if tc.byDigest == (tc.kind == mirrorsets.TagKind) || tc.wantSourceUntouched {
				// A mirror that is not asked for this kind of pull lacks the image too: only
				// the source can answer.
				mirror = newTestRegistry(t)
			}

			rendered, err := mirrorsets.Render([]mirrorsets.Set{{Kind: tc.kind, Name: "mirrors", Entries: []mirrorsets.Entry{{
				Field: "spec.x[0]", Source: source.host + "/team", Mirrors: []string{mirror.host + "/mirror"}, Policy: tc.policy,
			}}}}, mirrorsets.DefaultMaxMirrors)
			if err != nil || len(rendered.Problems) > 0 {
				t.Fatalf("Render() = %v, %v", rendered.Problems, err)
			}
			cfg := newPodmanConfig(t, "")
			cfg.trust(t, source)
			cfg.trust(t, mirror)
			if err := os.WriteFile(filepath.Join(cfg.dir, "registries.conf.d", "mirror-sets.conf"), []byte(rendered.Content), 0o644); err != nil {
				t.Fatal(err)
			}
			ref := source.host + "/team/app:1"
			if tc.byDigest {
				ref = source.host + "/team/app@" + digest
			}

			got, err := mustInspector(t, cfg.options()).Architectures(context.Background(), ref, nil)
			if tc.wantBlocked {
				var ie *Error
				if !errors.As(err, &ie) || ie.Reason != ReasonBlocked {
					t.Errorf("Architectures(%s) = %v, %v; want a %s error", ref, got.Architectures, err, ReasonBlocked)
				}
				if n := source.requests.Load() + mirror.requests.Load(); n != 0 {
					t.Errorf("%d requests, want none", n)
				}
				return
			}
			if tc.wantSourceUntouched {
				if err == nil {
					t.Errorf("Architectures(%s) = %v, want the mirror's failure", ref, got.Architectures)
				}
				if n := source.requests.Load(); n != 0 {
					t.Errorf("the source got %d requests, want none (NeverContactSource)", n)
				}
				if mirror.requests.Load() == 0 {
					t.Error("the mirror was never asked")
				}
				return
			}
			if err != nil {
				t.Fatalf("Architectures(%s) error = %v", ref, err)
			}
			want := []string{"amd64"}
			if tc.byDigest || tc.wantMirror {
				want = []string{"arm64", "s390x"}
			}
			if diff := cmp.Diff(want, got.Architectures); diff != "" {
				t.Errorf("Architectures() mismatch (-want +got):\n%s", diff)
			}
			switch {
			case tc.wantMirror && mirror.manifestGets.Load() == 0:
				t.Error("the mirror served no manifest")
			case !tc.wantMirror && mirror.requests.Load() != 0:
				t.Errorf("the mirror got %d requests, want none", mirror.requests.Load())
			}
			if !tc.wantMirror && source.manifestGets.Load() == 0 {
				t.Error("the source served no manifest")
			}
		})
	}
}
