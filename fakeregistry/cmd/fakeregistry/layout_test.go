package main

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/archgate/archgate/fakeregistry"
)

// writeLayout writes an OCI layout with one random image tagged v1 and returns its directory.
func writeLayout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{fakeregistry.RefNameAnnotation: "v1"})); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLayoutFlag checks how --catalog and --layout become the catalog.
func TestLayoutFlag(t *testing.T) {
	dir := writeLayout(t)
	tests := map[string]struct {
		args     []string
		wantRefs []string
		wantErr  string
	}{
		"none":              {},
		"layout alone":      {args: []string{"--layout", "oci/app=" + dir}, wantRefs: []string{"oci/app:v1"}},
		"layout on catalog": {args: []string{"--catalog", "../../testdata/catalog.yaml", "--layout", "oci/app=" + dir}, wantRefs: []string{"oci/app:v1", "library/multi:latest"}},
		"two layouts":       {args: []string{"--layout", "oci/a=" + dir, "--layout", "oci/b=" + dir}, wantRefs: []string{"oci/a:v1", "oci/b:v1"}},
		"no separator":      {args: []string{"--layout", dir}, wantErr: `--layout "` + dir + `": want REPOSITORY=DIR`},
		"no directory":      {args: []string{"--layout", "oci/app=" + dir + "/nope"}, wantErr: "--layout: layouts[0].path: not an OCI image layout"},
		"bad repository":    {args: []string{"--layout", "OCI=" + dir}, wantErr: `layouts[0].repository: invalid repository name (value "OCI")`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := parseServeFlags(t, tc.args).loadCatalog()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("loadCatalog: %v", err)
			}
			if len(tc.wantRefs) == 0 && c != nil {
				t.Errorf("catalog without --catalog or --layout = %v, want nil", c)
			}
			for _, ref := range tc.wantRefs {
				if _, err := c.Image(ref); err != nil {
					t.Errorf("Image(%s): %v", ref, err)
				}
			}
		})
	}
}
