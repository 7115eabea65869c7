package inspect

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCanonicalReference(t *testing.T) {
	const dgst = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := map[string]struct {
		image      string
		wantRef    string
		wantPinned bool
		wantErr    bool
	}{
		"short name":            {image: "nginx", wantRef: "docker.io/library/nginx:latest"},
		"short name with tag":   {image: "nginx:1.27", wantRef: "docker.io/library/nginx:1.27"},
		"docker hub user":       {image: "someone/app:v1", wantRef: "docker.io/someone/app:v1"},
		"docker hub explicit":   {image: "docker.io/library/busybox", wantRef: "docker.io/library/busybox:latest"},
		"registry with port":    {image: "registry.example:5000/app:v2", wantRef: "registry.example:5000/app:v2"},
		"localhost with port":   {image: "localhost:5000/app", wantRef: "localhost:5000/app:latest"},
		"deep path":             {image: "quay.io/org/team/sub/app:1", wantRef: "quay.io/org/team/sub/app:1"},
		"digest pinned":         {image: "quay.io/org/app@" + dgst, wantRef: "quay.io/org/app@" + dgst, wantPinned: true},
		"tag and digest":        {image: "quay.io/org/app:1.0@" + dgst, wantRef: "quay.io/org/app@" + dgst, wantPinned: true},
		"short tag and digest":  {image: "nginx:1.27@" + dgst, wantRef: "docker.io/library/nginx@" + dgst, wantPinned: true},
		"port, tag and digest":  {image: "r.example:5000/a/b:t@" + dgst, wantRef: "r.example:5000/a/b@" + dgst, wantPinned: true},
		"surrounding spaces":    {image: " nginx ", wantRef: "docker.io/library/nginx:latest"},
		"upper case repository": {image: "quay.io/Org/app", wantErr: true},
		"empty":                 {image: "", wantErr: true},
		"bad digest":            {image: "quay.io/org/app@sha256:abc", wantErr: true},
		"transport prefix":      {image: "docker://quay.io/org/app", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ref, pinned, err := CanonicalReference(tc.image)
			if (err != nil) != tc.wantErr {
				t.Fatalf("CanonicalReference(%q) error = %v, wantErr %v", tc.image, err, tc.wantErr)
			}
			if diff := cmp.Diff(struct {
				Ref    string
				Pinned bool
			}{tc.wantRef, tc.wantPinned}, struct {
				Ref    string
				Pinned bool
			}{ref, pinned}); diff != "" {
				t.Errorf("CanonicalReference(%q) mismatch (-want +got):\n%s", tc.image, diff)
			}
		})
	}
}

func TestRepository(t *testing.T) {
	tests := map[string]struct {
		ref  string
		want string
	}{
		"tag":          {ref: "r.example/app:1", want: "r.example/app"},
		"port and tag": {ref: "r.example:5000/app:1", want: "r.example:5000/app"},
		"digest":       {ref: "r.example:5000/app@sha256:abc", want: "r.example:5000/app"},
		"port, no tag": {ref: "r.example:5000/app", want: "r.example:5000/app"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := repository(tc.ref); got != tc.want {
				t.Errorf("repository(%q) = %q, want %q", tc.ref, got, tc.want)
			}
		})
	}
}

// FuzzCanonicalReference feeds arbitrary strings as image references (a pod's image field is
// the tenant's): nothing may panic, and an accepted reference canonicalizes to a fixed point
// (the canonical form parses to itself, pinned the same way), the property the inspection
// cache and the known-images document key on.
func FuzzCanonicalReference(f *testing.F) {
	for _, s := range []string{"nginx", "nginx:1.25", "docker.io/library/nginx", "r.example:5000/team/app:1",
		"r.example/app:1@sha256:" + strings.Repeat("a", 64), "r.example/app@sha256:" + strings.Repeat("0", 64),
		"  spaced:1 ", "UPPER/case", "a//b", "r.example:99999/app", "localhost/x", ":tag", "@sha256:", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, image string) {
		ref, pinned, err := CanonicalReference(image)
		if err != nil {
			return
		}
		again, pinnedAgain, err := CanonicalReference(ref)
		if err != nil || again != ref || pinnedAgain != pinned {
			t.Fatalf("CanonicalReference(%q) = %q (pinned %v); of that: %q (pinned %v), %v", image, ref, pinned, again, pinnedAgain, err)
		}
		if _, err := ParseReference(ref); err != nil {
			t.Fatalf("canonical %q does not parse: %v", ref, err)
		}
	})
}

func TestWrittenForms(t *testing.T) {
	const dgst = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := map[string]struct {
		canonical string
		want      []string
	}{
		"official image, latest": {
			canonical: "docker.io/library/nginx:latest",
			want: []string{"docker.io/library/nginx:latest", "docker.io/library/nginx", "library/nginx:latest", "library/nginx",
				"nginx:latest", "nginx", "docker.io/nginx:latest", "docker.io/nginx"},
		},
		"Docker Hub user image, tag": {
			canonical: "docker.io/team/app:1.2",
			want:      []string{"docker.io/team/app:1.2", "team/app:1.2"},
		},
		"digest": {
			canonical: "docker.io/library/busybox@" + dgst,
			want: []string{"docker.io/library/busybox@" + dgst, "library/busybox@" + dgst,
				"busybox@" + dgst, "docker.io/busybox@" + dgst},
		},
		"other registry with a port, latest": {
			canonical: "registry.example:5000/team/app:latest",
			want:      []string{"registry.example:5000/team/app:latest", "registry.example:5000/team/app"},
		},
		"other registry, digest": {
			canonical: "quay.io/org/tool@" + dgst,
			want:      []string{"quay.io/org/tool@" + dgst},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := WrittenForms(tt.canonical)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("WrittenForms(%q) = %q, want %q", tt.canonical, got, tt.want)
			}
			for _, form := range got {
				if ref, _, err := CanonicalReference(form); err != nil || ref != tt.canonical {
					t.Errorf("CanonicalReference(%q) = %q, %v; want %q", form, ref, err, tt.canonical)
				}
			}
		})
	}
}
