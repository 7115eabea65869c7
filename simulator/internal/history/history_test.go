package history

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/archgate/archgate/simulator/internal/report"
)

// TestFromMarkdown reads committed report pages of three verdicts.
func TestFromMarkdown(t *testing.T) {
	type figure struct {
		value            float64
		measured, passed bool
	}
	for file, tc := range map[string]struct {
		wantCommit, wantMachine string
		wantStarted             time.Time
		wantVerdict             Verdict
		wantFigures             int
		want                    map[string]figure
	}{
		"27412c1abe88-20261128T031352Z": {
			wantCommit: "27412c1abe88", wantMachine: "2 cores, AMD EPYC", wantStarted: time.Date(2026, 11, 28, 3, 13, 52, 0, time.UTC),
			wantVerdict: Passed, wantFigures: 17,
			want: map[string]figure{"gateHold.p50": {0.0238, true, true}, "handwrittenRatio.create.p99": {1.66, true, true}, "throughput": {50, true, true}},
		},
		"347824560712-20261128T021438Z": {
			wantCommit: "347824560712", wantMachine: "2 cores (quota 1.70), AMD EPYC", wantStarted: time.Date(2026, 11, 28, 2, 14, 38, 0, time.UTC),
			wantVerdict: NotJudged, wantFigures: 17,
			want: map[string]figure{"ratio.throughput": {1, true, false}, "placedAtAdmissionPods": {9373, true, true}},
		},
		"13de2e9e73d4-20261123T231131Z": {
			wantCommit: "13de2e9e73d4", wantMachine: "2 cores, AMD EPYC", wantStarted: time.Date(2026, 11, 23, 23, 11, 31, 0, time.UTC),
			wantVerdict: Failed, wantFigures: 13,
			want: map[string]figure{"handwrittenRatio.throughput": {0.70, true, false}},
		},
	} {
		t.Run(file, func(t *testing.T) {
			page, err := os.ReadFile(filepath.Join("testdata", file+".md"))
			if err != nil {
				t.Fatal(err)
			}
			e, err := FromMarkdown(file, page)
			if err != nil {
				t.Fatal(err)
			}
			if e.Commit != tc.wantCommit || e.Machine != tc.wantMachine || !e.Started.Equal(tc.wantStarted) || e.Verdict != tc.wantVerdict || len(e.Figures) != tc.wantFigures {
				t.Errorf("got commit %q machine %q started %v verdict %q %d figures, want %q %q %v %q %d",
					e.Commit, e.Machine, e.Started, e.Verdict, len(e.Figures), tc.wantCommit, tc.wantMachine, tc.wantStarted, tc.wantVerdict, tc.wantFigures)
			}
			for metric, want := range tc.want {
				f, ok := e.Figure(metric)
				if got := (figure{f.Value, f.Measured, f.Passed}); !ok || got != want {
					t.Errorf("%s: got %+v (found %v), want %+v", metric, got, ok, want)
				}
			}
		})
	}
	if _, err := FromMarkdown("x", []byte("# not a report\n")); err == nil || !strings.Contains(err.Error(), "not a report summary") {
		t.Errorf("a page without a verdict: err = %v", err)
	}
}

// summary is a report summary with one expectation per check, as a run
// writes it.
func summary(t *testing.T, started time.Time, passed bool, checks map[string]float64) *report.Report {
	t.Helper()
	r := &report.Report{SchemaVersion: report.SchemaVersion, Scenario: report.ScenarioInfo{Name: "s"}, StartedAt: started,
		Environment: report.Environment{Commit: "abcdef0123456789", Cores: 2, CPUModel: "AMD EPYC"},
		Main:        &report.Pass{Name: "main"}, Passed: passed}
	for _, check := range []string{"gateHold.p50 <= 50ms", "throughput >= 45", "misplacedPods == 0"} {
		metric, _, _ := strings.Cut(check, " ")
		o := report.Outcome{Check: check, Metric: metric, Value: checks[metric], Measured: true, Passed: true}
		if metric == "gateHold.p50" {
			o.Goal = "<= 20.0ms"
			o.Passed = passed
		}
		r.Expectations = append(r.Expectations, o)
	}
	return r
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadIndexesTheNamedReports: the index reads the files it is given
// (the committed ones): a summary where there is one, the page otherwise,
// other pages as summaries, and nothing else.
func TestLoadIndexesTheNamedReports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	newer := "abcdef012345-20261201T000000Z"
	writeJSON(t, filepath.Join(dir, newer+".json"), summary(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), false, map[string]float64{"gateHold.p50": 0.08, "throughput": 50}))
	page, err := os.ReadFile(filepath.Join("testdata", "27412c1abe88-20261128T031352Z.md"))
	if err != nil {
		t.Fatal(err)
	}
	older := "27412c1abe88-20261128T031352Z"
	for name, data := range map[string][]byte{newer + ".md": []byte("# page\n"), older + ".md": page, "repeat-20261128T023719Z.md": nil,
		IndexFile: nil, "fedcba987654-20261202T000000Z.md": page} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ix := Load(dir, []string{newer + ".json", newer + ".md", older + ".md", "repeat-20261128T023719Z.md", IndexFile, older + "-latency.svg"})
	var names []string
	for _, e := range ix.Entries {
		names = append(names, e.Name)
	}
	if diff := cmp.Diff([]string{older, newer}, names); diff != "" {
		t.Errorf("entries, oldest first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"repeat-20261128T023719Z.md"}, ix.Summaries); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
	if len(ix.Unreadable) > 0 {
		t.Errorf("unreadable: %v", ix.Unreadable)
	}
	head := ix.Headline()
	if len(head) != 2 || head[0].Metric.Name != "gateHold.p50" || !head[0].HasGoal || head[1].Metric.Name != "throughput" {
		t.Fatalf("headline = %+v, want gateHold.p50 (with its goal) and throughput: the newest report's thresholds", head)
	}
	files, err := ix.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	md := string(files[filepath.Join(dir, IndexFile)])
	for _, want := range []string{
		"2 reports, 1 passed, 1 failed, 0 not judged",
		"![s across its reports](trend.svg)",
		"| `gateHold.p50` <= 50.0ms, goal <= 20.0ms | `throughput` >= 45.0/s |",
		"| [" + newer + "](" + newer + ".md) | `abcdef012345` | 2026-12-01 00:00 | 2 cores, AMD EPYC | FAILED | 80.0ms ❌ | 50.0/s |",
		"| [" + older + "](" + older + ".md) | `27412c1abe88` | 2026-11-28 03:13 | 2 cores, AMD EPYC | PASSED | 23.8ms | 50.0/s |",
		"- [repeat-20261128T023719Z](repeat-20261128T023719Z.md)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("index page lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, newer) > strings.Index(md, older) {
		t.Error("index page not newest first")
	}
	if svg := files[filepath.Join(dir, TrendFile)]; !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("goal")) {
		t.Errorf("trend plot missing or without its goal line (%d bytes)", len(svg))
	}
	var overview bytes.Buffer
	if err := WriteOverview(&overview, []Index{ix}); err != nil {
		t.Fatal(err)
	}
	if want := "| [s](s/index.md) | 2 | 1 / 1 / 0 | 2026-12-01 (`abcdef012345`) | FAILED |"; !strings.Contains(overview.String(), want) {
		t.Errorf("overview lacks %q:\n%s", want, overview.String())
	}
}
