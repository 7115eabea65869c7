package fakeregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Tarpit makes repositories answer every manifest request, whatever the
// reference, with one large image index sent slowly: what a registry run by
// a hostile tenant serves to hold a client's memory and time. The index is
// valid and names one linux/amd64 manifest, so a client that reads it whole
// gets an answer.
type Tarpit struct {
	// Repositories are the repository patterns (see Auth) it answers for.
	Repositories []string
	// Size is the index's size in bytes; at least MinTarpitSize.
	Size int
	// BytesPerSecond is the pace of the body; the headers go at once.
	BytesPerSecond int
}

// MinTarpitSize is the smallest tarpit index: the JSON around the padding.
const MinTarpitSize = 512

// tarpitTick is how often a tarpit sends the next part of its body.
const tarpitTick = 100 * time.Millisecond

// validate checks the size, pace and patterns.
func (t *Tarpit) validate() []error {
	var errs []error
	if len(t.Repositories) == 0 {
		errs = append(errs, fmt.Errorf("tarpit: no repositories"))
	}
	for _, p := range t.Repositories {
		if !validPattern(p) {
			errs = append(errs, fmt.Errorf("tarpit repository pattern %q is malformed", p))
		}
	}
	if t.Size < MinTarpitSize {
		errs = append(errs, fmt.Errorf("tarpit size %d: want at least %d bytes", t.Size, MinTarpitSize))
	}
	if t.BytesPerSecond <= 0 {
		errs = append(errs, fmt.Errorf("tarpit bytes per second %d: want more than 0", t.BytesPerSecond))
	}
	return errs
}

// applies reports whether the tarpit answers a request.
func (t *Tarpit) applies(info requestInfo) bool {
	if t == nil || (info.kind != KindManifestGet && info.kind != KindManifestHead) || info.repository == "" {
		return false
	}
	for _, p := range t.Repositories {
		if matchRepository(p, info.repository) {
			return true
		}
	}
	return false
}

// tarpitIndex is the index a tarpit of size bytes serves: one entry, and an
// annotation padded so that the document is exactly size bytes.
func tarpitIndex(size int) []byte {
	build := func(pad int) []byte {
		idx := v1.IndexManifest{
			SchemaVersion: 2,
			MediaType:     types.OCIImageIndex,
			Manifests: []v1.Descriptor{{
				MediaType: types.OCIManifestSchema1,
				Size:      1024,
				Digest:    v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)},
				Platform:  &v1.Platform{OS: "linux", Architecture: "amd64"},
			}},
			Annotations: map[string]string{"org.archgate.fakeregistry.padding": strings.Repeat("x", pad)},
		}
		data, err := json.Marshal(idx)
		if err != nil {
			panic(err) // a fixed document of strings always marshals
		}
		return data
	}
	return build(max(size-len(build(0)), 0))
}

// serve answers a manifest request from the tarpit: headers at once, then
// the body at the tarpit's pace until it is sent or the client gives up.
func (t *Tarpit) serve(ctx context.Context, done <-chan struct{}, w http.ResponseWriter, r *http.Request, body []byte) {
	dgst := digestOf(body)
	h := w.Header()
	h.Set("Content-Type", string(types.OCIImageIndex))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Docker-Content-Digest", dgst.String())
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodGet {
		return
	}
	chunk := max(t.BytesPerSecond*int(tarpitTick)/int(time.Second), 1)
	rc := http.NewResponseController(w)
	tick := time.NewTicker(tarpitTick)
	defer tick.Stop()
	for len(body) > 0 {
		n := min(chunk, len(body))
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		_ = rc.Flush() // a writer that cannot flush sends at its own pace

		body = body[n:]
		if len(body) == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		case <-done:
			return
		}
	}
}
