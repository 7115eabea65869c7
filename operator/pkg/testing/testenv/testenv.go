// Package testenv starts a real kube-apiserver and etcd (envtest) from the
// binaries the project builds from Go module sources into bin/k8s, tuned for
// scale tests: the admission plugins that would interfere with fake nodes are
// off, in-flight limits are raised and clients are not throttled.
//
// It is shared by the operator's integration tests and the simulator, so the
// control plane they run is configured in exactly one place.
package testenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsEnv names the environment variable that overrides where the
// kube-apiserver and etcd binaries are looked up.
const AssetsEnv = "ARCHGATE_ASSETS"

// MakeTarget is the make target that builds the control-plane binaries.
const MakeTarget = "make control-plane"

// DefaultQPS and DefaultBurst are the client rate limits of the returned
// rest.Config. They match the scheduler_perf harness: lower limits make
// client-side throttling, not the system under test, the bottleneck.
const (
	DefaultQPS   = 5000
	DefaultBurst = 5000
)

// Options configures a control plane. The zero value is usable.
type Options struct {
	// AssetsDir holds kube-apiserver and etcd. Defaults to $ARCHGATE_ASSETS,
	// then <repository root>/bin/k8s.
	AssetsDir string
	// CRDDirectoryPaths are installed before Start returns.
	CRDDirectoryPaths []string
	// WebhookInstallOptions are passed to envtest (webhook configurations to
	// install, with a serving certificate generated for them).
	WebhookInstallOptions envtest.WebhookInstallOptions
	// QPS and Burst of the returned rest.Config; zero means the defaults.
	QPS   float32
	Burst int
	// APIServerArgs are extra or overriding kube-apiserver flags.
	APIServerArgs map[string]string
	// Output receives the control plane's stdout and stderr; nil discards
	// them unless ARCHGATE_CONTROL_PLANE_OUTPUT=1.
	Output io.Writer
	// StartTimeout bounds the start of each component; zero means 60s.
	StartTimeout time.Duration
}

// Env is a running control plane.
type Env struct {
	// Config talks to the apiserver as an administrator, unthrottled.
	Config *rest.Config
	// Environment is the underlying envtest environment.
	Environment *envtest.Environment
	reaper      *reaper
}

// apiServerArgs are the flags every harness run needs. TaintNodesByCondition
// would give fake nodes a not-ready taint that no controller removes;
// ServiceAccount needs a token controller envtest does not run; priority and
// fairness plus the default in-flight limits throttle a 10k-pod burst.
func apiServerArgs() map[string]string {
	return map[string]string{
		"disable-admission-plugins":      "ServiceAccount,TaintNodesByCondition",
		"max-requests-inflight":          "5000",
		"max-mutating-requests-inflight": "5000",
		"enable-priority-and-fairness":   "false",
	}
}

// Start launches etcd and kube-apiserver and returns when the apiserver
// serves and the CRDs and webhooks are installed. The caller must call Stop.
func Start(opts Options) (*Env, error) {
	dir, err := resolveAssetsDir(opts.AssetsDir)
	if err != nil {
		return nil, err
	}
	rp, err := newReaper(dir)
	if err != nil {
		return nil, err
	}
	rp.reapOrphans()

	env := newEnvironment(opts, dir)
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		rp.release()
		return nil, fmt.Errorf("starting control plane from %s: %w", dir, err)
	}
	if err := rp.recordChildren(); err != nil {
		rp.killChildren()
		_ = env.Stop()
		rp.release()
		return nil, err
	}
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	return &Env{Config: cfg, Environment: env, reaper: rp}, nil
}

func newEnvironment(opts Options, dir string) *envtest.Environment {
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		CRDDirectoryPaths:        opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing:    true,
		WebhookInstallOptions:    opts.WebhookInstallOptions,
		ControlPlaneStartTimeout: timeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	apiServer := env.ControlPlane.GetAPIServer()
	args := apiServer.Configure()
	for k, v := range apiServerArgs() {
		args.Set(k, v)
	}
	for k, v := range opts.APIServerArgs {
		args.Set(k, v)
	}
	out := opts.Output
	if out == nil && os.Getenv("ARCHGATE_CONTROL_PLANE_OUTPUT") == "1" {
		out = os.Stderr
	}
	if out != nil {
		apiServer.Out, apiServer.Err = out, out
		if env.ControlPlane.Etcd == nil {
			env.ControlPlane.Etcd = &envtest.Etcd{}
		}
		env.ControlPlane.Etcd.Out, env.ControlPlane.Etcd.Err = out, out
	}
	return env
}

// Stop stops the apiserver and etcd and waits for them to exit.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	err := e.Environment.Stop()
	if err != nil {
		// A component that did not stop in time is killed with its process
		// group so nothing is left behind.
		e.reaper.killChildren()
	}
	e.reaper.release()
	return err
}

// resolveAssetsDir finds the directory that holds the control-plane binaries
// and fails with the make target to run when they are missing.
func resolveAssetsDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(AssetsEnv)
	}
	if dir == "" {
		root, err := RepositoryRoot()
		if err != nil {
			return "", fmt.Errorf("locating control-plane binaries: %w (set %s or run %s)", err, AssetsEnv, MakeTarget)
		}
		dir = filepath.Join(root, "bin", "k8s")
	}
	var missing []string
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("control-plane binaries %v not found in %s: run `%s` at the repository root", missing, dir, MakeTarget)
	}
	return filepath.Abs(dir)
}

// RepositoryRoot walks up from the working directory to the directory that
// holds go.work: the root of the archgate checkout.
func RepositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work found above the working directory")
		}
		dir = parent
	}
}
