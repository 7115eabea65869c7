package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = "../../.."

// userFacing are the files a user reads (globs under repoRoot). CHANGELOG.md is
// history and may name what the project tracked at the time; generated reports
// are left as they were written.
var userFacing = []string{"*.md", "*/README.md", "deploy/*/README.md", "docs/*.md", "scenarios/*.yaml"}

// unseenReference matches citations of what is not in the repository: issue
// numbers, the design note's sections and the seeds behind it.
var unseenReference = regexp.MustCompile(`(?i)\bissue\s*#?\s*\d|\bthe issue's\b|\bDESIGN\s*§|\bDESIGN\.md\b|\bseed 0\d\d\b`)

// userFacingFiles lists the files userFacing names, CHANGELOG.md excluded.
func userFacingFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range userFacing {
		matches, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			if filepath.Base(m) != "CHANGELOG.md" {
				files = append(files, m)
			}
		}
	}
	if len(files) == 0 {
		t.Fatalf("no user-facing files under %s", repoRoot)
	}
	return files
}

// TestDocsCiteOnlyTheRepository fails for every line of a user-facing file that
// cites an issue or the design note, which a user cannot read: the sentence must
// state the fact itself or point to a page in docs/.
func TestDocsCiteOnlyTheRepository(t *testing.T) {
	for _, f := range userFacingFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if m := unseenReference.Find(line); m != nil {
				t.Errorf("%s:%d: %q cites what is not in the repository; state the fact or point to docs/: %s",
					relPath(f), i+1, m, bytes.TrimSpace(line))
			}
		}
	}
}

// TestExpectationSourcesOneLine fails for every expectation whose source spans
// more than one line of its scenario file: a source says in one sentence where
// the threshold comes from, and its history is in git log.
func TestExpectationSourcesOneLine(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "scenarios", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range multiLineSources(t, data) {
			t.Errorf("%s:%d: the source spans more than one line; say in one line where the threshold comes from", relPath(f), line)
		}
	}
}

// multiLineSources returns the lines of the expectations' source keys whose
// value is a block scalar or continues on the next line.
func multiLineSources(t *testing.T, data []byte) []int {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		t.Fatalf("not a YAML document: %v", err)
	}
	lines := strings.Split(string(data), "\n")
	var out []int
	for _, item := range mappingValue(doc.Content[0], "expectations").Content {
		key, value := mappingEntry(item, "source")
		if key == nil {
			continue
		}
		// Any scalar, plain and quoted too, continues on lines indented
		// deeper than its key; value.Line is 1-based, so lines[value.Line]
		// is the line after it.
		next := ""
		if value.Line < len(lines) {
			next = lines[value.Line]
		}
		continues := strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " ")) >= key.Column
		if value.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 || continues {
			out = append(out, key.Line)
		}
	}
	return out
}

// mappingValue returns the value of key in mapping m, or an empty node.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if _, v := mappingEntry(m, key); v != nil {
		return v
	}
	return &yaml.Node{}
}

// mappingEntry returns the key and value nodes of key in mapping m, or nils.
func mappingEntry(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// relPath names f from the repository's root, as a user would find it.
func relPath(f string) string {
	if r, err := filepath.Rel(repoRoot, f); err == nil {
		return r
	}
	return f
}

// TestMultiLineSources checks the detector on every form a source can take.
func TestMultiLineSources(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want []int
	}{
		"plain":         {yaml: "expectations:\n  - check: a\n    source: One line.\n  - check: b\n    source: Two.\n", want: nil},
		"quoted":        {yaml: "expectations:\n  - check: a\n    source: \"One: line.\"\n", want: nil},
		"source first":  {yaml: "expectations:\n  - source: One line.\n    check: a\nnext: 1\n", want: nil},
		"folded":        {yaml: "expectations:\n  - check: a\n    source: >\n      Two\n      lines.\n", want: []int{3}},
		"literal":       {yaml: "expectations:\n  - check: a\n    source: |\n      Two\n", want: []int{3}},
		"plain folded":  {yaml: "expectations:\n  - check: a\n    source: Two\n      lines.\n  - check: b\n    source: One.\n", want: []int{3}},
		"quoted folded": {yaml: "expectations:\n  - check: a\n    source: \"Two\n      lines.\"\n", want: []int{3}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := multiLineSources(t, []byte(tc.yaml))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("source lines (-want +got):\n%s", diff)
			}
		})
	}
}
