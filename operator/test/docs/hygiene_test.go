/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository, seen from operator/test/docs.
const repoRoot = "../../.."

// userDocs returns the user documentation, relative to repoRoot.
func userDocs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "scenarios/README.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		rel, _ := filepath.Rel(repoRoot, f)
		files = append(files, rel)
	}
	err = filepath.WalkDir(filepath.Join(repoRoot, "deploy"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "README.md" {
			rel, _ := filepath.Rel(repoRoot, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// internalRefs match references to the project's internal design notes and tracker, which a
// reader of the user documentation cannot follow. A scenario's `seed:` field (the random seed)
// is legitimate and not matched: only design-note phrasing is.
var internalRefs = map[string]*regexp.Regexp{
	"design seed":     regexp.MustCompile(`(?i)\b(design|the|a|its|this)\s+seeds?\b|\bseed\s+(doc|docs|document|notes?)\b`),
	"DESIGN document": regexp.MustCompile(`\bDESIGN\b`),
	"section sign":    regexp.MustCompile(`§`),
	"issue number":    regexp.MustCompile(`(?i)\bissue\s+#?\d+`),
}

// codeSpan matches inline code, whose brackets and parentheses are no link (a pattern such as
// `^[a-z]([-a-z0-9]*)$`).
var codeSpan = regexp.MustCompile("`[^`]*`")

// mdLink matches a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsReferOnlyToProjectFiles fails when the user documentation mentions internal design
// notes or issue numbers, or links to a file that is not in the repository.
func TestDocsReferOnlyToProjectFiles(t *testing.T) {
	for _, doc := range userDocs(t) {
		t.Run(doc, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(repoRoot, doc))
			if err != nil {
				t.Fatal(err)
			}
			fenced := false
			for i, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "```") {
					fenced = !fenced
				}
				for what, re := range internalRefs {
					if m := re.FindString(line); m != "" {
						t.Errorf("%s:%d: %s %q: user docs refer only to the project's own files", doc, i+1, what, m)
					}
				}
				if fenced {
					continue // code, not links
				}
				for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
					target := m[1]
					if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
						continue
					}
					target, _, _ = strings.Cut(target, "#")
					p := filepath.Join(repoRoot, filepath.Dir(doc), target)
					if _, err := os.Stat(p); err != nil {
						t.Errorf("%s:%d: link to %s: no such file in the repository", doc, i+1, m[1])
					}
				}
			}
		})
	}
}
