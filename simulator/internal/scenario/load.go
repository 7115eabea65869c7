package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/archgate/archgate/fakeregistry"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

// Loaded is a validated scenario with everything derived from it at load
// time: the registry catalog (built, so the ground truth is known before any
// process starts) and the parsed expectations.
type Loaded struct {
	// Scenario is the decoded file with defaults applied.
	Scenario *Scenario
	// File is the path the scenario was read from.
	File string
	// SHA256 is the hex digest of the file's bytes.
	SHA256 string
	// Catalog is the built registry content.
	Catalog *fakeregistry.Catalog
	// Checks are the parsed expectations.
	Checks []Check
}

// Load reads, strictly decodes and validates the scenario file at path.
func Load(path string) (*Loaded, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and validates a scenario; file names it in errors and
// anchors a relative catalogFile.
func Parse(file string, data []byte) (*Loaded, error) {
	var s Scenario
	root, list := strictyaml.Decode(data, &s, decodeOptions)
	if len(list) == 0 {
		list = validate(&s)
	}
	var catalog *fakeregistry.Catalog
	if len(list) == 0 {
		catalog, list = buildCatalog(file, &s)
	}
	if len(list) == 0 {
		list = validateWithCatalog(&s, catalog)
	}
	var checks []Check
	if len(list) == 0 {
		checks, list = parseChecks(&s, s.Expectations, "expectations")
	}
	if len(list) > 0 {
		return nil, withLocations(file, root, list)
	}
	sum := sha256.Sum256(data)
	return &Loaded{Scenario: &s, File: file, SHA256: hex.EncodeToString(sum[:]), Catalog: catalog, Checks: checks}, nil
}

// ExpectationsFile is a file of expectations alone, to hold a scenario to
// other thresholds (another machine, a stricter gate) without copying it.
type ExpectationsFile struct {
	// Expectations replace the scenario's own.
	Expectations []Expectation `json:"expectations"`
}

// LoadExpectations reads an expectations file and replaces l's checks with
// its own, validated against l's scenario.
func (l *Loaded) LoadExpectations(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading expectations: %w", err)
	}
	var f ExpectationsFile
	root, list := strictyaml.Decode(data, &f, decodeOptions)
	var checks []Check
	if len(list) == 0 {
		checks, list = parseChecks(l.Scenario, f.Expectations, "expectations")
	}
	if len(list) > 0 {
		return withLocations(path, root, list)
	}
	l.Checks = checks
	l.Scenario.Expectations = f.Expectations
	return nil
}

// buildCatalog builds the registry content of the scenario.
func buildCatalog(file string, s *Scenario) (*fakeregistry.Catalog, []*strictyaml.FieldError) {
	if s.Registry.CatalogFile != "" {
		p := s.Registry.CatalogFile
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		c, err := fakeregistry.LoadCatalog(p)
		if err != nil {
			return nil, []*strictyaml.FieldError{{Path: "registry.catalogFile", Value: strictyaml.FormatValue(s.Registry.CatalogFile), Reason: err.Error()}}
		}
		return c, nil
	}
	c, err := fakeregistry.NewCatalog(*s.Registry.Catalog)
	if err != nil {
		return nil, catalogErrors(err)
	}
	return c, nil
}

// catalogErrors maps fakeregistry's field errors into the scenario.
func catalogErrors(err error) []*strictyaml.FieldError {
	var out []*strictyaml.FieldError
	for _, e := range strictyaml.FieldErrors(err) {
		out = append(out, &strictyaml.FieldError{Path: strictyaml.JoinPath("registry.catalog", e.Path), Value: e.Value, Reason: e.Reason})
	}
	if len(out) == 0 {
		out = append(out, &strictyaml.FieldError{Path: "registry.catalog", Reason: err.Error()})
	}
	return out
}

// withLocations sets file, line and column on every error and joins them.
func withLocations(file string, root *yaml.Node, list []*strictyaml.FieldError) error {
	return strictyaml.Join(file, strictyaml.Locate(root, list))
}
