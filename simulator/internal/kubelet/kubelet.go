package kubelet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
	"github.com/archgate/archgate/simulator/internal/operand"
)

// resyncPeriod is how often the kubelet looks at every Deployment and
// process besides the Deployment events, as a kubelet relists its
// containers (PLEG, 1 s): a process that exited is started again.
const resyncPeriod = time.Second

// Options configure the kubelet.
type Options struct {
	// Client reads the Deployments, Services, Secrets and ConfigMaps and
	// writes Deployment status and EndpointSlices, as an administrator.
	Client kubernetes.Interface
	// Namespace is the operator's namespace, whose Deployments it runs.
	Namespace string
	// Binary is the archgate binary every container's image stands for.
	Binary string
	// HostIP is the non-loopback address every replica serves on.
	HostIP string
	// Kubeconfig is given to every process as KUBECONFIG: the run's
	// administrator configuration (envtest runs no ServiceAccount token
	// controller, so the components' ServiceAccounts have no token).
	Kubeconfig string
	// Dir holds each replica's volumes; LogDir each replica's log.
	Dir, LogDir string
	// Counters receives every replica's scraped metrics (port "metrics",
	// HTTPS, authenticated with MetricsAuth as a cluster's Prometheus).
	Counters    *operand.Counters
	MetricsAuth *operand.MetricsAuth
	// Pprof makes every replica serve net/http/pprof on a free loopback
	// port (the components' --pprof-bind-address, appended to the rendered
	// arguments), so that the simulator's --profile covers them. It changes
	// nothing the components do; off, the rendered arguments run as they are.
	Pprof bool
	// OnStart is called with the container's name and the PID of each
	// started process.
	OnStart func(component string, pid int)
	// Logf reports what the kubelet does and what fails.
	Logf func(format string, args ...any)
}

// Kubelet runs the Deployments of one namespace as processes.
type Kubelet struct {
	opts    Options
	trigger chan struct{}

	mu   sync.Mutex
	pods map[string][]*pod // by Deployment name
	held map[string]bool   // Deployments whose pods must not run (Hold)
	// replaced counts, by Deployment, the replicas of an older template
	// terminated once the new ones were ready (rolling updates).
	replaced map[string]int
	// exits counts, by Deployment, the processes that ended on their own
	// (crashed, or killed over their memory limit) and were restarted;
	// oomKills those of them killed over the limit.
	exits, oomKills map[string]int
	// delayed holds, by Deployment, the times until which one replica slot
	// each stays empty after StopReplica.
	delayed map[string][]time.Time
	seq     int
	lastErr error
	// slices names the EndpointSlices last written; slicesValid is false
	// when they must be written again.
	slices      string
	slicesValid bool
}

// pod is one replica.
type pod struct {
	name        string
	deployment  string
	hash        string
	labels      map[string]string
	proc        *operand.Process
	spec        Process
	ports       map[int32]int // container port -> host port
	terminating bool
}

// New returns a kubelet; Run starts it.
func New(opts Options) *Kubelet {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &Kubelet{opts: opts, trigger: make(chan struct{}, 1), pods: map[string][]*pod{}, held: map[string]bool{}, replaced: map[string]int{}, exits: map[string]int{}, oomKills: map[string]int{}, delayed: map[string][]time.Time{}}
}

// Run runs the Deployments until ctx is done, then stops every process
// (SIGTERM, no preStop delay: the run is over).
func (k *Kubelet) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(k.opts.Client, 0, informers.WithNamespace(k.opts.Namespace))
	deployments := factory.Apps().V1().Deployments()
	services := factory.Core().V1().Services()
	poke := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { k.poke() },
		UpdateFunc: func(any, any) { k.poke() },
		DeleteFunc: func(any) { k.poke() },
	}
	if _, err := deployments.Informer().AddEventHandler(poke); err != nil {
		return err
	}
	if _, err := services.Informer().AddEventHandler(poke); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer k.stopAll()
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return ctx.Err()
		}
	}
	tick := time.NewTicker(resyncPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-k.trigger:
		case <-tick.C:
		}
		list, err := deployments.Lister().Deployments(k.opts.Namespace).List(labels.Everything())
		if err == nil {
			err = k.sync(ctx, list, services)
		}
		k.setErr(err)
	}
}

func (k *Kubelet) poke() {
	select {
	case k.trigger <- struct{}{}:
	default:
	}
}

func (k *Kubelet) setErr(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil && (k.lastErr == nil || err.Error() != k.lastErr.Error()) {
		k.opts.Logf("kubelet: %v", err)
	}
	k.lastErr = err
}

// Err is the last error of the kubelet's loop (a pod that cannot start), nil
// when its last pass went through.
func (k *Kubelet) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastErr
}

// Hold stops the pods of the Deployment name at once (SIGKILL, as a crash)
// and keeps them from running until Release, as pods that crash-loop or
// cannot be pulled: the Deployment keeps its replicas, none is available.
func (k *Kubelet) Hold(name string) {
	k.mu.Lock()
	k.held[name] = true
	k.mu.Unlock()
	k.poke()
}

// Release lets the pods of the Deployment name run again.
func (k *Kubelet) Release(name string) {
	k.mu.Lock()
	delete(k.held, name)
	k.mu.Unlock()
	k.poke()
}

// Processes returns the processes of the running replicas of the Deployment name.
func (k *Kubelet) Processes(name string) []*operand.Process {
	k.mu.Lock()
	defer k.mu.Unlock()
	return running(k.pods[name])
}

// AllProcesses returns the running replicas of every Deployment, sorted by
// Deployment.
func (k *Kubelet) AllProcesses() []*operand.Process {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*operand.Process
	for _, name := range slices.Sorted(maps.Keys(k.pods)) {
		out = append(out, running(k.pods[name])...)
	}
	return out
}

// running returns the processes of the replicas that are not terminating.
func running(pods []*pod) []*operand.Process {
	var out []*operand.Process
	for _, p := range pods {
		if !p.terminating {
			out = append(out, p.proc)
		}
	}
	return out
}

// StopReplica ends the replica of the Deployment name that runs proc, as a
// deleted pod (graceful: out of the endpoints, preStop, SIGTERM) or a crashed
// one (crash: SIGKILL), and starts its replacement only after delay (the time
// a cluster takes to reschedule it, pull its image, or back off a crash loop).
func (k *Kubelet) StopReplica(name string, proc *operand.Process, crash bool, delay time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pods[name] {
		if p.proc == proc && !p.terminating {
			k.delayed[name] = append(k.delayed[name], time.Now().Add(delay))
			k.terminate(p, crash)
			k.poke()
			return nil
		}
	}
	return fmt.Errorf("no running replica of Deployment %s has that process", name)
}

// delayedSlots counts the replica slots of the Deployment name that StopReplica keeps empty
// at now, and forgets the expired ones. k.mu is held.
func (k *Kubelet) delayedSlots(name string, now time.Time) int {
	live := k.delayed[name][:0]
	for _, until := range k.delayed[name] {
		if until.After(now) {
			live = append(live, until)
		}
	}
	k.delayed[name] = live
	return len(live)
}

// Restarts returns, by Deployment, how many processes ended on their own
// and were restarted, and how many of them the kubelet killed over their
// container's memory limit.
func (k *Kubelet) Restarts() (exits, oomKills map[string]int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.exits), maps.Clone(k.oomKills)
}

// memoryCheckInterval is how often the kubelet compares a process's RSS to
// its memory limit. The kernel acts at once; a quarter second lets a spike
// shorter than that through, which errs towards archgate.
const memoryCheckInterval = 250 * time.Millisecond

// enforceMemoryLimit kills p when its RSS exceeds its container's memory
// limit, as the kernel's OOM killer does to a container over its cgroup's
// limit, and counts it as an exit; the next sync starts a replica in its place.
func (k *Kubelet) enforceMemoryLimit(ctx context.Context, p *pod) {
	tick := time.NewTicker(memoryCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		k.mu.Lock()
		gone := p.terminating
		k.mu.Unlock()
		if gone || p.proc.Err() != nil {
			return
		}
		proc, ok := procfs.Read(p.proc.Pid())
		if !ok || proc.RSS <= p.spec.MemoryLimit {
			continue
		}
		k.opts.Logf("kubelet: %s OOMKilled: RSS %d bytes above its memory limit of %d", p.name, proc.RSS, p.spec.MemoryLimit)
		k.mu.Lock()
		if !p.terminating {
			k.oomKills[p.deployment]++
			k.exits[p.deployment]++
			k.terminate(p, true)
		}
		k.mu.Unlock()
		k.poke()
		return
	}
}

// Replaced is the number of replicas of the Deployment name that a rolling
// update has replaced so far.
func (k *Kubelet) Replaced(name string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.replaced[name]
}

// sync brings every Deployment's processes, status and EndpointSlices to
// what the Deployments ask for.
func (k *Kubelet) sync(ctx context.Context, list []*appsv1.Deployment, services serviceLister) error {
	var errs []error
	seen := map[string]bool{}
	hashes := make([]string, len(list))
	for i, d := range list {
		seen[d.Name] = true
		var err error
		hashes[i], err = k.syncDeployment(ctx, d)
		errs = append(errs, err)
	}
	k.mu.Lock()
	for name, pods := range k.pods {
		if !seen[name] {
			for _, p := range pods {
				k.terminate(p, false)
			}
		}
	}
	k.mu.Unlock()
	// Endpoints first, then the status: a replica leaves the Service before
	// the Deployment counts it unavailable, as the endpoint controllers and
	// the Deployment controller see a pod's readiness at about the same time.
	errs = append(errs, k.syncEndpointSlices(ctx, services))
	for i, d := range list {
		if hashes[i] != "" {
			errs = append(errs, k.writeStatus(ctx, d, hashes[i]))
		}
	}
	return errors.Join(errs...)
}

// syncDeployment restarts exited processes, starts the missing replicas of
// the current template, and once they are ready terminates the others (a
// rolling update with full surge); it returns the template's hash.
func (k *Kubelet) syncDeployment(ctx context.Context, d *appsv1.Deployment) (string, error) {
	hash, err := templateHash(&d.Spec.Template)
	if err != nil {
		return "", err
	}
	k.mu.Lock()
	desired := int(derefReplicas(d)) - k.delayedSlots(d.Name, time.Now())
	held := k.held[d.Name]
	for _, p := range k.pods[d.Name] {
		if !p.terminating && (held || p.proc.Err() != nil) {
			if err := p.proc.Err(); err != nil {
				k.opts.Logf("kubelet: %s exited, restarting it: %v", p.name, err)
				k.exits[p.deployment]++
			}
			k.terminate(p, true)
		}
	}
	current := k.live(d.Name, hash)
	k.mu.Unlock()
	var startErr error
	for n := len(current); !held && n < desired; n++ {
		if startErr = k.startPod(ctx, d, hash); startErr != nil {
			break
		}
	}
	k.mu.Lock()
	if current = k.live(d.Name, hash); len(current) >= desired {
		extra := len(current) - desired
		for _, p := range k.pods[d.Name] {
			if p.terminating {
				continue
			}
			if p.hash != hash {
				k.terminate(p, false)
				k.replaced[d.Name]++
			} else if extra > 0 {
				k.terminate(p, false)
				extra--
			}
		}
	}
	k.mu.Unlock()
	return hash, startErr
}

// live returns the running replicas of the template hash. k.mu is held.
func (k *Kubelet) live(deployment, hash string) []*pod {
	var out []*pod
	for _, p := range k.pods[deployment] {
		if !p.terminating && p.hash == hash {
			out = append(out, p)
		}
	}
	return out
}

// startPod starts one replica and waits until its readiness probe passes.
func (k *Kubelet) startPod(ctx context.Context, d *appsv1.Deployment, hash string) error {
	k.mu.Lock()
	k.seq++
	name := fmt.Sprintf("%s-%s-%d", d.Name, hash[:8], k.seq)
	k.mu.Unlock()
	spec := d.Spec.Template.Spec.DeepCopy()
	dir := filepath.Join(k.opts.Dir, name)
	mounts, err := materialiseVolumes(ctx, k.opts.Client, d.Namespace, spec, dir)
	if err != nil {
		return fmt.Errorf("pod %s of Deployment %s: %w", name, d.Name, err)
	}
	ports, err := k.hostPorts(spec)
	if err != nil {
		return err
	}
	sb := Sandbox{
		Binary: k.opts.Binary, PodIP: k.opts.HostIP, Ports: ports, Mounts: mounts,
		Fields: map[string]string{"metadata.name": name, "metadata.namespace": d.Namespace, "status.podIP": k.opts.HostIP},
		Env:    []string{"KUBECONFIG=" + k.opts.Kubeconfig, "HOME=" + dir},
	}
	spec2, err := Translate(spec, sb)
	if err != nil {
		return fmt.Errorf("pod %s of Deployment %s: %w", name, d.Name, err)
	}
	component := spec.Containers[0].Name
	proc := &operand.Process{
		Name: component, Command: spec2.Command, Env: spec2.Env, ReadyURL: spec2.ReadyURL,
		LogPath: filepath.Join(k.opts.LogDir, name+".log"), Counters: k.opts.Counters,
		StopTimeout: max(spec2.Grace-spec2.PreStop, time.Second),
		OnStart: func(pid int) {
			if k.opts.OnStart != nil {
				k.opts.OnStart(component, pid)
			}
		},
	}
	if addr, ok := spec2.PortAddrs["metrics"]; ok {
		proc.MetricsURL, proc.MetricsAuth = "https://"+addr+"/metrics", k.opts.MetricsAuth
	}
	if k.opts.Pprof {
		free, err := operand.FreePorts("127.0.0.1", 1)
		if err != nil {
			return fmt.Errorf("pod %s of Deployment %s: a pprof port: %w", name, d.Name, err)
		}
		arg, url := operand.PprofEndpoint(net.JoinHostPort("127.0.0.1", strconv.Itoa(free[0])))
		proc.Command, proc.PprofURL = append(proc.Command, arg), url
	}
	if err := proc.Start(ctx); err != nil {
		return fmt.Errorf("pod %s of Deployment %s: %w", name, d.Name, err)
	}
	p := &pod{name: name, deployment: d.Name, hash: hash, labels: d.Spec.Template.Labels, proc: proc, spec: spec2, ports: ports}
	k.mu.Lock()
	k.pods[d.Name] = append(k.pods[d.Name], p)
	k.mu.Unlock()
	if spec2.MemoryLimit > 0 {
		go k.enforceMemoryLimit(ctx, p)
	}
	k.opts.Logf("kubelet: started %s (pid %d)", name, proc.Pid())
	return nil
}

// hostPorts picks a free host port for each container port.
func (k *Kubelet) hostPorts(spec *corev1.PodSpec) (map[int32]int, error) {
	var cports []int32
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			cports = append(cports, p.ContainerPort)
		}
	}
	free, err := operand.FreePorts(k.opts.HostIP, len(cports))
	if err != nil {
		return nil, fmt.Errorf("host ports on %s: %w", k.opts.HostIP, err)
	}
	out := map[int32]int{}
	for i, cp := range cports {
		out[cp] = free[i]
	}
	return out, nil
}

// terminate ends a replica: at once with SIGKILL (crash), or as a kubelet
// deletes a pod: out of the EndpointSlices first, then the preStop delay
// (the process keeps serving the calls already routed to it), then SIGTERM
// and SIGKILL after the rest of the grace period. k.mu is held.
func (k *Kubelet) terminate(p *pod, crash bool) {
	p.terminating = true
	k.slicesValid = false
	go func() {
		if crash {
			p.proc.Kill()
		} else {
			time.Sleep(p.spec.PreStop) // the preStop hook is a sleep; nothing to wait on
			p.proc.Stop()
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		pods := k.pods[p.deployment]
		for i, q := range pods {
			if q == p {
				k.pods[p.deployment] = append(pods[:i:i], pods[i+1:]...)
				break
			}
		}
		_ = os.RemoveAll(filepath.Join(k.opts.Dir, p.name))
		k.opts.Logf("kubelet: %s terminated", p.name)
	}()
}

// stopAll stops every process at the end of the run.
func (k *Kubelet) stopAll() {
	k.mu.Lock()
	var procs []*operand.Process
	for _, pods := range k.pods {
		for _, p := range pods {
			procs = append(procs, p.proc)
		}
	}
	k.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.Stop() })
	}
	wg.Wait()
}

// templateHash identifies a pod template, as the Deployment controller's
// pod-template-hash does.
func templateHash(t *corev1.PodTemplateSpec) (string, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func derefReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// HostIP is the first non-loopback IPv4 address of the host: the replicas'
// endpoints must be reachable from kube-apiserver, and EndpointSlices refuse
// loopback addresses.
func HostIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", errors.New("no non-loopback IPv4 address on the host for the replicas' endpoints (EndpointSlices refuse loopback)")
}
