package procs

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
)

// Sample is the resource use of the watched processes at one time.
type Sample struct {
	// At is the offset from the sampler's start.
	At time.Duration
	// CPU is the cumulative CPU time by process name.
	CPU map[string]time.Duration
	// RSS is the resident memory in bytes by process name, summed over the
	// processes of a component that runs several replicas.
	RSS map[string]int64
	// ReplicaRSS is the resident memory of the largest single process by
	// name: what one replica of a component needs, which is what its
	// container's memory limit and the footprint targets are about.
	ReplicaRSS map[string]int64
	// MachineBusy and MachineCapacity are the machine's cumulative busy CPU
	// time (every process, other work included) and its capacity (wall time
	// × cores) from /proc/stat: their deltas between two samples give the
	// machine's utilization over that interval.
	MachineBusy, MachineCapacity time.Duration
}

// Utilization is the share of the machine's CPU (all cores, every process)
// that was busy between two samples; 0 when /proc/stat was unreadable.
func Utilization(from, to Sample) float64 {
	capacity := to.MachineCapacity - from.MachineCapacity
	if capacity <= 0 {
		return 0
	}
	return float64(to.MachineBusy-from.MachineBusy) / float64(capacity)
}

// Sampler reads the simulator's and its children's resource use at an
// interval, and keeps each child's last reading so it can still report them
// after they stopped.
type Sampler struct {
	mu      sync.Mutex
	start   time.Time
	samples []Sample
	last    map[string]procfs.Proc
	maxLoad float64
	// first and latest machine-wide CPU readings, and the simulator's own
	// CPU at the first one.
	firstStat, lastStat cpuStat
	selfAtFirst         time.Duration
	// watched names the component processes by PID; dead holds the final
	// CPU of watched processes that exited (a restarted component's CPU is
	// the sum over its processes).
	watched map[int]string
	lastPid map[int]procfs.Proc
	cancel  context.CancelFunc
	done    chan struct{}
	// cores is the machine's CPU count, limit the run's CPU quota in cores
	// (CPULimit; 0 without one).
	cores, limit float64
}

// SelfName is the name the simulator's own process is reported under.
const SelfName = "simulator"

// StartSampler samples every interval until Stop.
func StartSampler(ctx context.Context, interval time.Duration) *Sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &Sampler{start: time.Now(), last: map[string]procfs.Proc{}, watched: map[int]string{}, lastPid: map[int]procfs.Proc{},
		cancel: cancel, done: make(chan struct{}), cores: float64(runtime.NumCPU()), limit: CPULimit()}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.Sample()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Watch adds a component process: its CPU and RSS are reported under name
// (summed over every process watched under that name, dead ones with
// their last reading).
func (s *Sampler) Watch(pid int, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watched[pid] = name
}

// Sample takes one reading now and returns it.
func (s *Sampler) Sample() Sample {
	procs := procfs.Children(os.Getpid())
	if self, ok := procfs.Read(os.Getpid()); ok {
		self.Name = SelfName
		procs = append(procs, self)
	}
	smp := Sample{At: time.Since(s.start), CPU: map[string]time.Duration{}, RSS: map[string]int64{}, ReplicaRSS: map[string]int64{}}
	load := loadAverage()
	stat := readCPUStat()
	smp.MachineBusy = time.Duration(stat.busy) * time.Second / procfs.ClockTicks
	smp.MachineCapacity = time.Duration(stat.total) * time.Second / procfs.ClockTicks
	if s.cores > 0 && s.limit > 0 && s.limit < s.cores {
		// Under a CPU quota the run can use only limit of the cores.
		smp.MachineCapacity = time.Duration(float64(smp.MachineCapacity) * s.limit / s.cores)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readWatched(&smp)
	s.maxLoad = max(s.maxLoad, load)
	if s.firstStat.total == 0 {
		s.firstStat = stat
		for _, p := range procs {
			if p.Name == SelfName {
				s.selfAtFirst = p.CPU
			}
		}
	}
	s.lastStat = stat
	for _, p := range procs {
		if _, ok := s.watched[p.PID]; ok && p.PID != os.Getpid() {
			continue // read by readWatched, under its component's name
		}
		self := p.Name == SelfName && p.PID == os.Getpid()
		if !self && p.Name != "kube-apiserver" && p.Name != "etcd" {
			continue // the guard (the simulator's executable too) and other helpers
		}
		smp.CPU[p.Name] += p.CPU
		smp.RSS[p.Name] += p.RSS
		smp.ReplicaRSS[p.Name] = max(smp.ReplicaRSS[p.Name], p.RSS)
		s.last[p.Name] = p
	}
	s.samples = append(s.samples, smp)
	return smp
}

// readWatched adds the watched processes' readings to smp and keeps each
// component's last reading; called with mu held.
func (s *Sampler) readWatched(smp *Sample) {
	names := map[string]bool{}
	for pid, name := range s.watched {
		names[name] = true
		if p, ok := procfs.Read(pid); ok {
			s.lastPid[pid] = p
			smp.RSS[name] += p.RSS
			smp.ReplicaRSS[name] = max(smp.ReplicaRSS[name], p.RSS)
		}
		smp.CPU[name] += s.lastPid[pid].CPU
	}
	for name := range names {
		peak := max(s.last[name].PeakRSS, smp.RSS[name])
		s.last[name] = procfs.Proc{Name: name, CPU: smp.CPU[name], RSS: smp.RSS[name], PeakRSS: peak}
	}
}

// MaxLoad returns the highest 1-minute load average seen.
func (s *Sampler) MaxLoad() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxLoad
}

// ForeignCPU returns the CPU time that processes other than the simulator,
// kube-apiserver and etcd used on the machine between the first and the
// last sample, and that time as a share of the machine's capacity (all
// cores) over the same period. Other engineers' builds on a shared machine
// show up here; they make every latency noisier.
func (s *Sampler) ForeignCPU() (time.Duration, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dBusy := s.lastStat.busy - s.firstStat.busy
	dTotal := s.lastStat.total - s.firstStat.total
	if dTotal == 0 {
		return 0, 0
	}
	ours := -s.selfAtFirst
	for _, p := range s.last {
		ours += p.CPU
	}
	foreign := time.Duration(dBusy)*time.Second/procfs.ClockTicks - ours
	foreign = max(foreign, 0)
	capacity := time.Duration(dTotal) * time.Second / procfs.ClockTicks
	return foreign, float64(foreign) / float64(capacity)
}

// cpuStat is the machine-wide CPU time from /proc/stat, in clock ticks.
type cpuStat struct{ busy, total uint64 }

// readCPUStat sums the "cpu" line of /proc/stat: total is every field,
// busy all but idle and iowait.
func readCPUStat() cpuStat {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuStat{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuStat{}
	}
	var st cpuStat
	// user nice system idle iowait irq softirq steal (guest time is
	// already counted in user).
	for i, v := range f[1:min(len(f), 9)] {
		n, _ := strconv.ParseUint(v, 10, 64)
		st.total += n
		if i != 3 && i != 4 {
			st.busy += n
		}
	}
	return st
}

// loadAverage reads the 1-minute load average; 0 when unknown.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// Stop ends sampling after a last reading.
func (s *Sampler) Stop() {
	s.cancel()
	<-s.done
}

// Samples returns the readings so far.
func (s *Sampler) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.samples...)
}

// Last returns each process's last reading (peak RSS included).
func (s *Sampler) Last() map[string]procfs.Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]procfs.Proc, len(s.last))
	for k, v := range s.last {
		out[k] = v
	}
	return out
}
