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

// Package realnode gives end-to-end tests the hermetic real-node cluster of hack/cluster.sh
// (`make cluster-up`): a real kubelet, containerd and runc node plus the control plane, inside
// their own PID, network and mount namespaces. The script owns the cluster's life cycle so that
// `make cluster-up`/`make cluster-down` and the tests start and stop the same thing; this
// package runs it, reads the state directory it writes and imports images into the node.
package realnode

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NodeName is the name of the real node (linux/amd64, the machine's architecture).
const NodeName = "realnode-amd64"

// FakeArchitectures returns the architectures of the kwok nodes beside the real one (as
// hack/cluster.sh's KWOK_ARCHS), one node FakeNodeName(arch) each: Ready through node leases
// kwok renews, and the pods bound to them Running (kwok's stages; nothing runs). Only pods
// tolerating FakeNodeTaintKey land there.
func FakeArchitectures() []string { return []string{"arm64", "ppc64le", "s390x"} }

// FakeNodeTaintKey is the key of the NoSchedule taint of the kwok nodes (value "fake"): pods
// that must really run, archgate's own among them, stay off the fake nodes.
const FakeNodeTaintKey = "kwok.x-k8s.io/node"

// FakeNodeName is the name of the kwok node of an architecture.
func FakeNodeName(arch string) string { return "kwok-" + arch }

// Registry is the host:port of the cluster's registry (the fake registry over TLS on the node
// IP): archgate/pause:1 is a linux/amd64-only image, archgate/archgate the index `make image`
// wrote when the cluster started. The kubelet pulls from it; RegistryCA is its CA.
const Registry = "10.200.0.2:5000"

// PrivateUser and PrivatePassword are the Registry's one user (basic auth), the only one who
// may pull its private/** repositories, such as private/arm64-only:1 (linux/arm64 only); the
// other repositories (archgate/**, e2e/**: e2e/arm64-only:1, e2e/riscv64-only:1, one platform
// each) are anonymous. hack/cluster.sh sets the same.
const (
	PrivateUser     = "e2e"
	PrivatePassword = "archgate-e2e"
)

// Options locate the repository and the cluster's state.
type Options struct {
	// RepoRoot is the repository root (holding hack/cluster.sh and bin/).
	RepoRoot string
	// StateDir is the cluster's state directory; RepoRoot/bin/cluster-state when empty (the
	// Makefile's CLUSTER_STATE default).
	StateDir string
	// Assets is the directory holding kube-apiserver and etcd; RepoRoot/bin/k8s when empty.
	Assets string
}

// Cluster is a running real-node cluster.
type Cluster struct {
	opts Options
	// Kubeconfig is the host-side admin kubeconfig (cluster-admin, through the loopback relay).
	Kubeconfig string
	// Config is the rest.Config of Kubeconfig.
	Config *rest.Config
}

// withDefaults fills the defaults and makes the paths absolute (ctr reads a relative socket
// path as a URL).
func (o Options) withDefaults() (Options, error) {
	root, err := filepath.Abs(o.RepoRoot)
	if err != nil {
		return o, fmt.Errorf("realnode: Options.RepoRoot %q: %w", o.RepoRoot, err)
	}
	o.RepoRoot = root
	if o.StateDir == "" {
		o.StateDir = filepath.Join(o.RepoRoot, "bin", "cluster-state")
	}
	if o.Assets == "" {
		o.Assets = filepath.Join(o.RepoRoot, "bin", "k8s")
	}
	if o.StateDir, err = filepath.Abs(o.StateDir); err != nil {
		return o, fmt.Errorf("realnode: Options.StateDir %q: %w", o.StateDir, err)
	}
	return o, nil
}

// Up starts the cluster, or reuses the one already running in StateDir, and returns once the
// node is Ready. The cluster outlives the test process: stop it with Down (or make cluster-down).
func Up(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, err := script(ctx, opts, "up"); err != nil {
		return nil, err
	}
	return Attach(ctx, opts)
}

// Attach returns the cluster running in StateDir, or an error saying it does not run.
func Attach(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, err := script(ctx, opts, "status"); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(opts.StateDir, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("realnode: loading %s: %w", kubeconfig, err)
	}
	return &Cluster{opts: opts, Kubeconfig: kubeconfig, Config: cfg}, nil
}

// Down stops the cluster by its recorded PIDs and removes its cgroups.
func (c *Cluster) Down(ctx context.Context) error {
	_, err := script(ctx, c.opts, "down")
	return err
}

// RegistryCA returns the PEM CA certificate of Registry, for clients in the cluster (archgate's
// caBundleConfigmapRef) and on the host.
func (c *Cluster) RegistryCA() ([]byte, error) {
	return os.ReadFile(filepath.Join(c.opts.StateDir, "certs.d", Registry, "ca.crt"))
}

// ImportImage imports an OCI layout archive (a tar of a layout directory, such as bin/image.tar
// of `make image`) into the node's containerd: each index the layout tags T becomes
// repository:T, and repository@<its digest> (what a release's install.yaml and chart pin), for
// pods to run without a registry (imagePullPolicy IfNotPresent or Never). The containerd socket is a file in
// the state directory, reachable from the host.
func (c *Cluster) ImportImage(ctx context.Context, archive, repository string) error {
	ctr := filepath.Join(c.opts.RepoRoot, "bin", "cluster", "ctr")
	sock := filepath.Join(c.opts.StateDir, "run", "containerd", "containerd.sock")
	images := func(args ...string) error {
		return run(exec.CommandContext(ctx, ctr, append([]string{"--address", sock, "-n", "k8s.io", "images"}, args...)...))
	}
	if err := images("import", "--base-name", repository, archive); err != nil {
		return err
	}
	tags, err := layoutTags(archive)
	if err != nil {
		return err
	}
	// The kubelet resolves repository@digest by that name only: give each index that name too.
	for tag, digest := range tags {
		if err := images("tag", "--force", repository+":"+tag, repository+"@"+digest); err != nil {
			return err
		}
	}
	return nil
}

// layoutTags reads the index.json of an OCI layout archive: each tag (the ref.name annotation)
// and the digest of the index it names.
func layoutTags(archive string) (map[string]string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("realnode: no index.json in %s: %w", archive, err)
		}
		if path.Clean(h.Name) != "index.json" {
			continue
		}
		var index ocispec.Index
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			return nil, fmt.Errorf("realnode: %s index.json: %w", archive, err)
		}
		tags := map[string]string{}
		for _, m := range index.Manifests {
			if tag := m.Annotations[ocispec.AnnotationRefName]; tag != "" {
				tags[tag] = m.Digest.String()
			}
		}
		return tags, nil
	}
}

// script runs hack/cluster.sh with a subcommand and returns its standard output.
func script(ctx context.Context, opts Options, subcommand string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(opts.RepoRoot, "hack", "cluster.sh"), subcommand)
	cmd.Env = append(os.Environ(), "CLUSTER_STATE="+opts.StateDir, "ARCHGATE_ASSETS="+opts.Assets)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := run(cmd); err != nil {
		return "", err
	}
	return out.String(), nil
}

// run runs cmd, returning an error carrying its standard error when it fails.
func run(cmd *exec.Cmd) error {
	var stderr bytes.Buffer
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("realnode: %s: %w: %s", cmd.String(), err, bytes.TrimSpace(stderr.Bytes()))
		}
		return fmt.Errorf("realnode: %s: %w", cmd.String(), err)
	}
	return nil
}
