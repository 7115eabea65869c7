package fakeregistry

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestNegotiate(t *testing.T) {
	const (
		index    = string(types.OCIImageIndex)
		list     = string(types.DockerManifestList)
		oci      = string(types.OCIManifestSchema1)
		schema2  = string(types.DockerManifestSchema2)
		schema2Q = schema2 + "; q=0.9"
	)
	tests := map[string]struct {
		mode   Negotiation
		accept []string
		stored string
		want   verdict
	}{
		"no accept gets what is stored":             {mode: NegotiateDefaultPlatform, stored: index, want: serveStored},
		"wildcard gets what is stored":              {mode: NegotiateNotFound, accept: []string{"*/*"}, stored: index, want: serveStored},
		"accepted index":                            {mode: NegotiateDefaultPlatform, accept: []string{oci + ", " + index}, stored: index, want: serveStored},
		"accept over several headers":               {mode: NegotiateNotFound, accept: []string{schema2, list}, stored: list, want: serveStored},
		"schema2-only client, index, distribution":  {mode: NegotiateDefaultPlatform, accept: []string{schema2Q}, stored: index, want: serveDefaultPlatform},
		"schema2-only client, list, distribution":   {mode: NegotiateDefaultPlatform, accept: []string{schema2}, stored: list, want: serveDefaultPlatform},
		"schema2-only client, index, not-found":     {mode: NegotiateNotFound, accept: []string{schema2}, stored: index, want: notAcceptable},
		"schema2-only client, oci manifest":         {mode: NegotiateDefaultPlatform, accept: []string{schema2}, stored: oci, want: notAcceptable},
		"oci-only client, schema2 is always served": {mode: NegotiateDefaultPlatform, accept: []string{oci}, stored: schema2, want: serveStored},
		"oci-only client, schema2, not-found":       {mode: NegotiateNotFound, accept: []string{oci}, stored: schema2, want: notAcceptable},
		"q=0 excludes a type":                       {mode: NegotiateNotFound, accept: []string{index + ";q=0", schema2}, stored: index, want: notAcceptable},
		"ignore-accept serves anything":             {mode: NegotiateIgnoreAccept, accept: []string{schema2}, stored: index, want: serveStored},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := negotiate(tc.mode, parseAccept(tc.accept), tc.stored); got != tc.want {
				t.Errorf("negotiate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPaginate(t *testing.T) {
	all := []string{"a", "b/c", "b/d", "e"}
	tests := map[string]struct {
		query       string
		wantEntries []string
		wantLink    string
		wantErr     bool
	}{
		"everything":          {query: "", wantEntries: all},
		"first page":          {query: "n=2", wantEntries: []string{"a", "b/c"}, wantLink: `</x?last=b%2Fc&n=2>; rel="next"`},
		"second page":         {query: "n=2&last=b/c", wantEntries: []string{"b/d", "e"}},
		"last between":        {query: "last=b", wantEntries: []string{"b/c", "b/d", "e"}},
		"last after all":      {query: "last=z", wantEntries: []string{}},
		"n larger than rest":  {query: "n=10&last=a", wantEntries: []string{"b/c", "b/d", "e"}},
		"n zero":              {query: "n=0", wantEntries: []string{}},
		"n not a number":      {query: "n=two", wantErr: true},
		"n negative":          {query: "n=-1", wantErr: true},
		"exactly one page":    {query: "n=4", wantEntries: all},
		"one before the last": {query: "n=3", wantEntries: []string{"a", "b/c", "b/d"}, wantLink: `</x?last=b%2Fd&n=3>; rel="next"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			p, err := paginate(all, q)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.wantEntries, nonNil(p.entries)); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if got := p.link("/x"); got != tc.wantLink {
				t.Errorf("link = %q, want %q", got, tc.wantLink)
			}
		})
	}
}
