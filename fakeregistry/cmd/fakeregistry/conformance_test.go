//go:build conformance

package main

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestConformance runs the OCI distribution-spec conformance suite, both pinned builds (make
// test-conformance builds them into bin/ and names them in CONFORMANCE_GINKGO and
// CONFORMANCE_MAIN), against `fakeregistry serve --writable` without auth, with basic auth and with
// bearer tokens, every workflow on. A configuration fails on any failed test, and on a skip count
// other than the suite's wantSkipped, so a test that starts being skipped is noticed too. Results
// go to CONFORMANCE_RESULTS/<suite>-<auth>/ (default: a temporary directory).
func TestConformance(t *testing.T) {
	resultsRoot := os.Getenv("CONFORMANCE_RESULTS")
	if resultsRoot == "" {
		resultsRoot = t.TempDir()
	}
	var summary []string
	for _, suite := range conformanceSuites() {
		binary := os.Getenv(suite.binaryEnv)
		if binary == "" {
			t.Fatalf("%s is not set: run make test-conformance, which builds the suite", suite.binaryEnv)
		}
		version := "unknown version"
		if info, err := buildinfo.ReadFile(binary); err == nil {
			version = info.Main.Version
		}
		for _, auth := range conformanceAuths() {
			name := suite.name + "-" + auth.name
			t.Run(name, func(t *testing.T) {
				results := filepath.Join(resultsRoot, name)
				if err := os.RemoveAll(results); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(results, 0o755); err != nil {
					t.Fatal(err)
				}
				registry := startServe(t, auth.serveArgs)
				start := time.Now()
				c := runSuite(t, binary, suite, auth, registry, results)
				line := fmt.Sprintf("%-14s %-38s %3d passed, %d failed, %d skipped (%s)",
					name, version, c.passed, c.failed, c.skipped, time.Since(start).Round(10*time.Millisecond))
				summary = append(summary, line)
				if c.failed > 0 {
					t.Errorf("%d failed (results in %s):\n  %s", c.failed, results, strings.Join(c.failures, "\n  "))
				}
				if c.skipped != suite.wantSkipped {
					t.Errorf("%d skipped, want %d (see conformanceSuites for why; results in %s)", c.skipped, suite.wantSkipped, results)
				}
				if c.passed == 0 {
					t.Errorf("no test passed (results in %s)", results)
				}
			})
		}
	}
	t.Logf("distribution-spec conformance:\n  %s", strings.Join(summary, "\n  "))
}

// conformanceSuite is one pinned build of the conformance suite and how to run and read it.
type conformanceSuite struct {
	// name names the suite in subtests and result directories.
	name string
	// binaryEnv is the environment variable naming the built suite.
	binaryEnv string
	// args are the suite binary's arguments.
	args []string
	// env returns the suite's configuration for a registry and credentials.
	env func(registry *url.URL, user, password, results string) []string
	// counts reads the suite's results from its results directory.
	counts func(results string) (suiteCounts, error)
	// wantSkipped is how many tests the suite skips against fakeregistry when all is well.
	wantSkipped int
}

// conformanceSuites are the two pinned builds.
func conformanceSuites() []conformanceSuite {
	return []conformanceSuite{
		{
			// The Ginkgo suite the spec shipped through v1.1.1 (hack/conformance/ginkgo).
			name:      "ginkgo",
			binaryEnv: "CONFORMANCE_GINKGO",
			args:      []string{"-ginkgo.no-color"},
			env: func(registry *url.URL, user, password, results string) []string {
				return []string{
					"OCI_ROOT_URL=" + registry.String(),
					"OCI_NAMESPACE=conformance/repo1",
					"OCI_CROSSMOUNT_NAMESPACE=conformance/repo2",
					// fakeregistry mounts without from (the spec lets registries treat from as optional).
					"OCI_AUTOMATIC_CROSSMOUNT=true",
					"OCI_USERNAME=" + user, "OCI_PASSWORD=" + password,
					"OCI_TEST_PULL=1", "OCI_TEST_PUSH=1", "OCI_TEST_CONTENT_DISCOVERY=1", "OCI_TEST_CONTENT_MANAGEMENT=1",
					// Teardowns delete manifests first (the default); fakeregistry would also
					// delete blobs a manifest still references, as registries without checks do.
					"OCI_DELETE_MANIFEST_BEFORE_BLOBS=true",
					"OCI_REPORT_DIR=" + results,
				}
			},
			counts: ginkgoCounts,
			// Four specs are alternatives of others and skip by design: "Get tag name from
			// environment" and "Populate registry with test tags (no push)" (they run only for a
			// registry that cannot be pushed to), "Cross-mounting of nonexistent blob should yield
			// session id" (only when the mount with from was 202, fakeregistry's is 201) and the
			// automatic-crossmount-disabled variant (fakeregistry runs the enabled one).
			wantSkipped: 4,
		},
		{
			// The suite of the spec's main branch (hack/conformance/main).
			name:      "main",
			binaryEnv: "CONFORMANCE_MAIN",
			env: func(registry *url.URL, user, password, results string) []string {
				return []string{
					"OCI_REGISTRY=" + registry.Host,
					"OCI_TLS=disabled",
					"OCI_REPO1=conformance/repo1",
					"OCI_REPO2=conformance/repo2",
					"OCI_USERNAME=" + user, "OCI_PASSWORD=" + password,
					"OCI_VERSION=1.1",
					// Version 1.1 leaves these four off; fakeregistry does them, so test them.
					"OCI_API_BLOBS_UPLOAD_CANCEL=true",
					"OCI_API_BLOBS_DIGEST_HEADER=true",
					"OCI_API_MANIFESTS_DIGEST_HEADER=true",
					"OCI_API_MANIFESTS_TAG_PARAM=true",
					"OCI_DATA_SHA512=true",
					// Sparse manifests stay off (the default): fakeregistry refuses a manifest
					// whose blobs are not in the repository, which the spec allows.
					"OCI_DATA_SPARSE=false",
					"OCI_RESULTS_DIR=" + results,
					"OCI_LOG=warn",
				}
			},
			counts:      mainCounts,
			wantSkipped: 0,
		},
	}
}

// conformanceAuth is how the registry authenticates the suite.
type conformanceAuth struct {
	name      string
	serveArgs []string
	// user and password are the suite's credentials; empty without auth.
	user, password string
}

// conformanceAuths are the three auth modes; the user may pull and push conformance/**.
func conformanceAuths() []conformanceAuth {
	users := func(mode string) []string {
		return []string{"--auth-mode", mode, "--user", "conformance:conformance-secret",
			"--pull", "conformance=conformance/**", "--push", "conformance=conformance/**"}
	}
	return []conformanceAuth{
		{name: "none"},
		{name: "basic", serveArgs: users("basic"), user: "conformance", password: "conformance-secret"},
		{name: "bearer", serveArgs: users("bearer"), user: "conformance", password: "conformance-secret"},
	}
}

// serveURL finds the registry URL in serve's first line of output.
var serveURL = regexp.MustCompile(`^serving \d+ images at (\S+) `)

// startServe runs `fakeregistry serve --writable` with args on a free loopback port in this
// process, stops it when the test ends, and returns its URL.
func startServe(t *testing.T, args []string) *url.URL {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	cmd := newRootCommand()
	cmd.SetOut(w)
	cmd.SetErr(w)
	cmd.SetArgs(append([]string{"serve", "--writable", "--addr", "127.0.0.1:0"}, args...))
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx)
		_ = w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	r := bufio.NewReader(out)
	first, err := r.ReadString('\n')
	// Drain the rest so serve never blocks writing.
	go func() { _, _ = io.Copy(io.Discard, r) }()
	m := serveURL.FindStringSubmatch(first)
	if err != nil || m == nil {
		t.Fatalf("serve did not start: %q (%v)", first, err)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatalf("serve URL %q: %v", m[1], err)
	}
	return u
}

// runSuite runs a suite binary against registry and reads its counts; its output is kept in
// results/output.txt.
func runSuite(t *testing.T, binary string, suite conformanceSuite, auth conformanceAuth, registry *url.URL, results string) suiteCounts {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	logPath := filepath.Join(results, "output.txt")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, binary, suite.args...)
	// Only the suite's own settings: no OCI_* variable of the caller's, no configuration file.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + results},
		suite.env(registry, auth.user, auth.password, results)...)
	cmd.Dir = results
	cmd.Stdout, cmd.Stderr = log, log
	runErr := cmd.Run()
	c, err := suite.counts(results)
	if err != nil {
		t.Fatalf("reading %s results: %v (suite: %v; output in %s)", suite.name, err, runErr, logPath)
	}
	if runErr != nil && c.failed == 0 {
		t.Errorf("%s exited with %v but reports no failure (output in %s)", suite.name, runErr, logPath)
	}
	return c
}

// suiteCounts are a run's test counts and the names of the failed tests.
type suiteCounts struct {
	passed, failed, skipped int
	failures                []string
}

// junitCase is a JUnit testcase as both suites write it.
type junitCase struct {
	Name   string `xml:"name,attr"`
	Status string `xml:"status,attr"`
}

// ginkgoCounts counts the specs ("[It]" test cases) of the Ginkgo suite's junit.xml as Ginkgo
// does: pending specs count as skipped, and failed, panicked, interrupted, timed-out and aborted
// ones as failed.
func ginkgoCounts(results string) (suiteCounts, error) {
	var doc struct {
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := readXML(filepath.Join(results, "junit.xml"), &doc); err != nil {
		return suiteCounts{}, err
	}
	var c suiteCounts
	for _, s := range doc.Suites {
		for _, tc := range s.Cases {
			if !strings.HasPrefix(tc.Name, "[It]") {
				continue
			}
			switch tc.Status {
			case "passed":
				c.passed++
			case "skipped", "pending":
				c.skipped++
			default:
				c.failed++
				c.failures = append(c.failures, tc.Status+": "+tc.Name)
			}
		}
	}
	return c, nil
}

// mainCounts reads the main-branch suite's junit.xml: its totals are those the suite prints (every
// node of its result tree), skipped ones including those disabled by configuration.
func mainCounts(results string) (suiteCounts, error) {
	var doc struct {
		Suites []struct {
			Tests    int         `xml:"tests,attr"`
			Failures int         `xml:"failures,attr"`
			Errors   int         `xml:"errors,attr"`
			Skipped  int         `xml:"skipped,attr"`
			Disabled int         `xml:"disabled,attr"`
			Cases    []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := readXML(filepath.Join(results, "junit.xml"), &doc); err != nil {
		return suiteCounts{}, err
	}
	if len(doc.Suites) == 0 {
		return suiteCounts{}, fmt.Errorf("%s/junit.xml has no test suite", results)
	}
	var c suiteCounts
	for _, s := range doc.Suites {
		c.failed += s.Failures + s.Errors
		c.skipped += s.Skipped + s.Disabled
		c.passed += s.Tests - s.Failures - s.Errors - s.Skipped - s.Disabled
		for _, tc := range s.Cases {
			if tc.Status == "failure" || tc.Status == "error" {
				c.failures = append(c.failures, tc.Status+": "+tc.Name)
			}
		}
	}
	return c, nil
}

// readXML decodes the XML file at path into v.
func readXML(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := xml.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}
