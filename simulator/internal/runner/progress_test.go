package runner

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/archgate/archgate/simulator/internal/recorder"
)

// TestProgressLines: off a terminal the progress is plain lines, at most one per lineEvery, so
// a log or a pipe shows each pass as it runs; on a terminal one line is redrawn in place.
func TestProgressLines(t *testing.T) {
	for name, tc := range map[string]struct {
		live                bool
		wantPrefix, wantEnd string
		wantLines           int
	}{
		"a log or a pipe": {live: false, wantPrefix: "[main ", wantEnd: "\n", wantLines: 1},
		"a terminal":      {live: true, wantPrefix: "\r\033[K[main ", wantEnd: "ETA —", wantLines: 0},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			p := newProgress(&out, tc.live, "main", 100, time.Now())
			p.update(10, recorder.Progress{Bound: 5, Gated: 8, Ungated: 6})
			p.update(20, recorder.Progress{Bound: 15}) // within every interval: not printed
			got := out.String()
			if !strings.HasPrefix(got, tc.wantPrefix) || !strings.HasSuffix(got, tc.wantEnd) ||
				strings.Count(got, "\n") != tc.wantLines || !strings.Contains(got, "created 10/100  gated 2  bound 5") {
				t.Errorf("progress output %q, want one report starting %q, ending %q", got, tc.wantPrefix, tc.wantEnd)
			}
		})
	}
}
