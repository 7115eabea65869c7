package report

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// A run writes its report in two files. The summary (<base>.json) holds
// every figure, verdict and expectation and is small enough to commit; the
// raw series (<base>.raw.json.gz: per-pod samples, per-second counts and the
// periodic resource readings, about 95% of a 10,000-pod report) stay on the
// machine that ran it. They are what a single-pair compare tests and what the
// plots draw; repeat, compare --count, the scale family and the index read
// summaries only, so a committed summary serves every history view and a
// missing raw file only makes compare run the scenario again.

// RawSuffix ends the name of a report's raw series file.
const RawSuffix = ".raw.json.gz"

// Raw is the part of a report kept beside it, compressed and out of git.
type Raw struct {
	// SchemaVersion is the summary's.
	SchemaVersion int `json:"schemaVersion"`
	// Passes are the series of each pass, by pass name.
	Passes map[string]RawPass `json:"passes"`
	// ResourceSamples are Resources.Samples.
	ResourceSamples []ResourceSample `json:"resourceSamples,omitempty"`
}

// RawPass is one pass's series.
type RawPass struct {
	PerSecond PerSecond  `json:"perSecond"`
	Samples   Samples    `json:"samples"`
	Trace     []PodTrace `json:"trace,omitempty"`
}

// RawPath is the raw series file of the summary at path.
func RawPath(summaryPath string) string {
	return strings.TrimSuffix(summaryPath, ".json") + RawSuffix
}

// split returns the summary (a copy of r without the series; r is not
// changed) and the series.
func (r *Report) split() (*Report, Raw) {
	s := *r
	raw := Raw{SchemaVersion: SchemaVersion, Passes: map[string]RawPass{}, ResourceSamples: r.Resources.Samples}
	s.Resources.Samples = nil
	strip := func(p *Pass) *Pass {
		if p == nil {
			return nil
		}
		raw.Passes[p.Name] = RawPass{PerSecond: p.PerSecond, Samples: p.Samples, Trace: p.Trace}
		c := *p
		c.PerSecond, c.Samples, c.Trace = PerSecond{}, Samples{}, nil
		return &c
	}
	s.Main, s.Baseline, s.Handwritten, s.Floor = strip(r.Main), strip(r.Baseline), strip(r.Handwritten), strip(r.Floor)
	return &s, raw
}

// merge puts the series back into the passes of r.
func (r *Report) merge(raw Raw) {
	for _, p := range r.Passes() {
		if rp, ok := raw.Passes[p.Name]; ok {
			p.PerSecond, p.Samples, p.Trace = rp.PerSecond, rp.Samples, rp.Trace
		}
	}
	r.Resources.Samples = raw.ResourceSamples
}

// HasSamples reports whether the per-pod samples of r were loaded: a report
// of schema version 1 holds them, a summary only with its raw file beside it.
func (r *Report) HasSamples() bool {
	for _, p := range r.Passes() {
		if p.BoundPods > 0 && len(p.Samples.Total) == 0 {
			return false
		}
	}
	return true
}

// writeRaw writes raw to path, gzip-compressed, through a temporary file.
func writeRaw(path string, raw Raw) error {
	tmp := path + ".tmp"
	err := writeFile(tmp, func(w io.Writer) error {
		zw := gzip.NewWriter(w)
		if err := json.NewEncoder(zw).Encode(raw); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// loadRaw merges the raw file of the summary at path into r when it exists.
func loadRaw(path string, r *Report) error {
	f, err := os.Open(RawPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", RawPath(path), err)
	}
	var raw Raw
	if err := json.NewDecoder(zr).Decode(&raw); err != nil {
		return fmt.Errorf("%s: %w", RawPath(path), err)
	}
	if raw.SchemaVersion != r.SchemaVersion {
		return fmt.Errorf("%s: schema version %d, its summary %d", RawPath(path), raw.SchemaVersion, r.SchemaVersion)
	}
	r.merge(raw)
	return nil
}
