// Package credprovidertest builds the fake credential provider plugin for tests.
package credprovidertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Build compiles the fake plugin (package fakeplugin) into dir, once under each of the given
// names (a provider's name is its executable's file name): dir is then the plugins' binary
// directory. Tests call it once, from TestMain: a build takes seconds.
func Build(dir string, names ...string) error {
	if len(names) == 0 {
		return errors.New("credprovidertest: no plugin name")
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return errors.New("credprovidertest: cannot locate the fake plugin's source")
	}
	first := filepath.Join(dir, names[0])
	cmd := exec.Command("go", "build", "-o", first, ".")
	cmd.Dir = filepath.Join(filepath.Dir(file), "fakeplugin")
	// The test run's GOFLAGS (build tags, -race) do not concern the plugin.
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the fake credential provider plugin: %w\n%s", err, out)
	}
	for _, name := range names[1:] {
		if err := os.Link(first, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("linking the fake plugin as %s: %w", name, err)
		}
	}
	return nil
}
