package existing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/fakeregistry/strictyaml"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// CatalogSpec is the registry content of a loaded scenario as a catalog spec (inline, or the
// scenario's catalogFile decoded).
func CatalogSpec(l *scenario.Loaded) (fakeregistry.CatalogSpec, error) {
	r := l.Scenario.Registry
	if r.CatalogFile == "" {
		return *r.Catalog, nil
	}
	p := r.CatalogFile
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(l.File), p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return fakeregistry.CatalogSpec{}, fmt.Errorf("%s: registry.catalogFile: %w", l.File, err)
	}
	var spec fakeregistry.CatalogSpec
	if _, errs := strictyaml.Decode(data, &spec, strictyaml.Options{}); len(errs) > 0 {
		return spec, strictyaml.Join(p, errs)
	}
	return spec, nil
}

// MergeCatalogs is one catalog serving the content of every scenario's: their repositories and
// generated batches, in order. An image's content depends only on its repository, position in
// it and spec, so each image keeps the digests the scenario's own catalog gives it, and a
// scenario's ground truth (computed by the simulator from the scenario) stays the truth of the
// merged registry. The merged spec is validated: two scenarios naming one repository is an
// error. Layouts are refused (their paths are relative to another file).
func MergeCatalogs(names []string, specs []fakeregistry.CatalogSpec) (fakeregistry.CatalogSpec, error) {
	var out fakeregistry.CatalogSpec
	var errs []error
	for i, s := range specs {
		if len(s.Layouts) > 0 {
			errs = append(errs, fmt.Errorf("%s: registry catalog layouts cannot be merged into the cluster's registry", names[i]))
		}
		if s.Negotiation != "" && out.Negotiation != "" && s.Negotiation != out.Negotiation {
			errs = append(errs, fmt.Errorf("%s: registry catalog negotiation %q differs from an earlier scenario's %q", names[i], s.Negotiation, out.Negotiation))
		}
		if s.Negotiation != "" {
			out.Negotiation = s.Negotiation
		}
		out.Repositories = append(out.Repositories, s.Repositories...)
		out.Generate = append(out.Generate, s.Generate...)
	}
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	if _, err := fakeregistry.NewCatalog(out); err != nil {
		return out, fmt.Errorf("merging the catalogs of %v: %w", names, err)
	}
	return out, nil
}
