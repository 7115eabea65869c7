package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/vcs"
)

// crdDir is where the operator's CRDs live, relative to the repository root.
const crdDir = "operator/config/crd/bases"

// startControlPlane starts envtest and installs the operator's CRDs.
func (r *run) startControlPlane(ctx context.Context) error {
	crds := filepath.Join(r.opts.RepoRoot, crdDir)
	// Aggregator routing sends webhook calls to the Service's endpoints
	// (the EndpointSlices package kubelet writes), as there is no
	// kube-proxy to route a ClusterIP.
	env, err := testenv.Start(testenv.Options{CRDDirectoryPaths: []string{crds},
		APIServerArgs: map[string]string{"enable-aggregator-routing": "true"}})
	if err != nil {
		return err
	}
	// Hand the guard the children before anything else can fail.
	for _, c := range procfs.Children(os.Getpid()) {
		if c.Name == "kube-apiserver" || c.Name == "etcd" {
			r.opts.Guard.Watch(c.ID)
		}
	}
	r.defer_(func() {
		r.sampler.Sample() // last reading of the children's peak RSS
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		}
	})
	r.env.ControlPlane = "envtest"
	if err := r.connect(env.Config); err != nil {
		return err
	}
	return ctx.Err()
}

// connect makes the run's clients for cfg and reads the server's version.
func (r *run) connect(cfg *rest.Config) error {
	r.cfg = cfg
	// The harness creates and watches pods in protobuf, as the controllers
	// that create pods in a cluster (ReplicaSet, Job) and kube-scheduler do:
	// JSON would charge the apiserver an encoding no cluster pays.
	harness := rest.CopyConfig(r.cfg)
	harness.ContentType = k8sruntime.ContentTypeProtobuf
	harness.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(harness)
	if err != nil {
		return err
	}
	r.client = client
	if v, err := client.Discovery().ServerVersion(); err == nil {
		r.env.KubernetesVersion = v.GitVersion
	}
	r.sampler.Sample()
	return nil
}

// environment describes the machine and the code.
func environment(ctx context.Context, root string) report.Environment {
	e := report.Environment{
		GoVersion: goVersion(),
		Cores:     runtime.NumCPU(),
		CPULimit:  procs.CPULimit(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
	}
	e.Host, _ = os.Hostname()
	if st, err := vcs.Describe(ctx, root); err == nil {
		e.Commit, e.Dirty, e.Tree = st.Commit, st.Dirty, st.Tree
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		e.OS += " " + utsString(u.Release[:])
	}
	e.CPUModel = cpuModel()
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		e.MemoryBytes = int64(si.Totalram) * int64(si.Unit)
	}
	return e
}

func utsString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
