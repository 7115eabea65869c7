package runner

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scheduler"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// kubeconfig writes the run's client configuration to a file for the
// component processes, once, and returns its path.
func (r *run) kubeconfig() (string, error) {
	path := filepath.Join(r.tmp, "kubeconfig")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	c := r.cfg
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sim"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData,
		CertificateAuthority: c.CAFile, InsecureSkipTLSVerify: c.Insecure}
	cfg.AuthInfos["sim"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData,
		ClientCertificate: c.CertFile, ClientKey: c.KeyFile, Token: c.BearerToken, TokenFile: c.BearerTokenFile,
		Username: c.Username, Password: c.Password}
	cfg.Contexts["sim"] = &clientcmdapi.Context{Cluster: "sim", AuthInfo: "sim"}
	cfg.CurrentContext = "sim"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing the components' kubeconfig: %w", err)
	}
	return path, nil
}

// logDir is where the component processes write their logs.
func (r *run) logDir() (string, error) {
	dir := filepath.Join(r.tmp, "logs")
	return dir, os.MkdirAll(dir, 0o700)
}

// startScheduler starts the scheduler: as a process of the simulator's own
// binary (Options.SchedulerCommand), or embedded in this process.
func (r *run) startScheduler(ctx context.Context) error {
	opts := scheduler.Options{
		PercentageOfNodesToScore: r.s.Scheduler.PercentageOfNodesToScore,
		DisableEvents:            r.s.Scheduler.DisableEvents,
	}
	if r.opts.SchedulerCommand == nil {
		sched, err := scheduler.Start(ctx, r.cfg, opts)
		if err != nil {
			return fmt.Errorf("starting the scheduler: %w", err)
		}
		r.defer_(sched.Stop)
		r.schedFamilies = func(context.Context) ([]*dto.MetricFamily, error) { return legacyregistry.DefaultGatherer.Gather() }
		return nil
	}
	p, err := r.schedulerProcess(opts)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return fmt.Errorf("starting the scheduler: %w", err)
	}
	r.defer_(p.Stop)
	r.schedFamilies = p.Families
	r.profiled = append(r.profiled, p)
	return nil
}

// schedulerProcess describes the scheduler process.
func (r *run) schedulerProcess(opts scheduler.Options) (*operand.Process, error) {
	kc, err := r.kubeconfig()
	if err != nil {
		return nil, err
	}
	logs, err := r.logDir()
	if err != nil {
		return nil, err
	}
	ports, err := operand.FreePorts("127.0.0.1", 1)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cmd := append(append([]string(nil), r.opts.SchedulerCommand...), "scheduler", "--kubeconfig", kc, "--bind-address", addr,
		"--percentage-of-nodes-to-score", strconv.Itoa(int(opts.PercentageOfNodesToScore)))
	if opts.DisableEvents {
		cmd = append(cmd, "--disable-events")
	}
	base := "http://" + addr
	return &operand.Process{
		Name: report.ComponentScheduler, Command: cmd,
		ReadyURL: base + "/readyz", MetricsURL: base + "/metrics", PprofURL: base + "/debug/pprof",
		LogPath: filepath.Join(logs, "scheduler.log"),
		OnStart: func(pid int) { r.sampler.Watch(pid, report.ComponentScheduler) },
	}, nil
}

// schedulerSLI reads the scheduler's SLI histogram; nil when unavailable.
func (r *run) schedulerSLI(ctx context.Context) []stats.Bucket {
	if r.schedFamilies == nil {
		return nil
	}
	families, err := r.schedFamilies(ctx)
	if err != nil && len(families) == 0 {
		return nil
	}
	return schedulerSLI(families)
}

// startProfiles takes, when Options.ProfileDir is set, a CPU profile of
// kube-apiserver and of every component process over the first
// Options.ProfileDuration of the pass; the returned stop waits for them and
// adds a heap profile of each process at the pass's end.
func (r *run) startProfiles(ctx context.Context, pass string) (stop func()) {
	if r.opts.ProfileDir == "" {
		return func() {}
	}
	d := r.opts.ProfileDuration
	if d == 0 {
		d = 30 * time.Second
	}
	dir := r.opts.ProfileDir
	var wg sync.WaitGroup
	write := func(name string, fetch func(f *os.File) error) {
		path := filepath.Join(dir, pass+"-"+name)
		f, err := os.Create(path)
		if err != nil {
			r.logf("profile %s: %v", path, err)
			return
		}
		defer f.Close()
		if err := fetch(f); err != nil {
			r.logf("profile %s: %v", path, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.logf("profiles: %v", err)
		return func() {}
	}
	wg.Go(func() {
		write("kube-apiserver.cpu.pprof", func(f *os.File) error {
			raw, err := r.client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + time.Minute).DoRaw(ctx)
			if err != nil {
				return err
			}
			_, err = f.Write(raw)
			return err
		})
	})
	procs := r.profiledProcesses()
	names := profileNames(procs)
	for i, p := range procs {
		wg.Go(func() {
			write(names[i]+".cpu.pprof", func(f *os.File) error { return p.Profile(ctx, "profile", d, f) })
		})
	}
	return func() {
		wg.Wait()
		for i, p := range procs {
			write(names[i]+".heap.pprof", func(f *os.File) error { return p.Profile(ctx, "heap", 0, f) })
		}
	}
}

// profiledProcesses are the component processes that serve pprof: the
// scheduler, and the operator's components in either mode (in operator mode
// every replica the kubelet runs).
func (r *run) profiledProcesses() []*operand.Process {
	out := append([]*operand.Process(nil), r.profiled...)
	if r.op != nil && r.op.op != nil {
		out = append(out, r.op.op.Processes()...)
	}
	if r.op != nil && r.op.kubelet != nil {
		out = append(out, r.op.kubelet.AllProcesses()...)
	}
	return out
}

// profileNames names each process's profiles after its component, numbered
// when several replicas of one component run (webhook-1, webhook-2, ...).
func profileNames(procs []*operand.Process) []string {
	count := map[string]int{}
	for _, p := range procs {
		count[p.Name]++
	}
	seen := map[string]int{}
	out := make([]string, len(procs))
	for i, p := range procs {
		out[i] = p.Name
		if count[p.Name] > 1 {
			seen[p.Name]++
			out[i] = fmt.Sprintf("%s-%d", p.Name, seen[p.Name])
		}
	}
	return out
}

// startBackground starts the scenario's background load, if any, as a
// process of the simulator's own executable, for the whole run.
func (r *run) startBackground(ctx context.Context) error {
	b := r.s.Background
	if b == nil {
		return nil
	}
	if r.opts.SchedulerCommand == nil {
		return fmt.Errorf("background: needs the simulator's executable (not available with --in-process)")
	}
	logs, err := r.logDir()
	if err != nil {
		return err
	}
	cmd := append(append([]string(nil), r.opts.SchedulerCommand...), "burn", "--share", strconv.FormatFloat(b.CPUShare, 'f', -1, 64))
	p := &operand.Process{Name: report.ComponentBackground, Command: cmd, LogPath: filepath.Join(logs, "background.log"),
		StopTimeout: 5 * time.Second,
		OnStart:     func(pid int) { r.sampler.Watch(pid, report.ComponentBackground) }}
	if err := p.Start(ctx); err != nil {
		return fmt.Errorf("starting the background load: %w", err)
	}
	r.defer_(p.Stop)
	return nil
}
