package runner

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
)

// Settling: the machine counts as quiet for the next pass when the
// simulator and the processes it started (kube-apiserver, etcd, the
// scheduler, the operator and its components) together use less than settleCPU cores
// for settleQuiet in a row; after settleMax the pass starts anyway.
const (
	settleCPU   = 0.3
	settleQuiet = 2 * time.Second
	settleMax   = 90 * time.Second
)

// settle waits until the control plane and the simulator are idle.
func (c *simulatedCluster) settle(ctx context.Context) error {
	start := time.Now()
	if err := c.collectGarbage(ctx); err != nil {
		return err
	}
	cpu := func() time.Duration {
		var total time.Duration
		if self, ok := procfs.Read(os.Getpid()); ok {
			total += self.CPU
		}
		for _, c := range procfs.Children(os.Getpid()) {
			total += c.CPU
		}
		return total
	}
	quiet := time.Duration(0)
	prev := cpu()
	for time.Since(start) < settleMax {
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
		now := cpu()
		if float64(now-prev)/float64(time.Second) < settleCPU {
			quiet += time.Second
		} else {
			quiet = 0
		}
		prev = now
		if quiet >= settleQuiet {
			break
		}
	}
	c.logf("settled in %.0fs", time.Since(start).Seconds())
	return nil
}

// collectGarbage runs a garbage collection in kube-apiserver (its pprof
// heap endpoint with gc=1) and in the simulator. With the watch cache of the
// previous passes the apiserver's heap is over a gigabyte: a collection
// cycle takes more than a core for two or three seconds, and one that
// happens to fall into a pass's first seconds, while the scheduler and the
// admission path warm up, stalls binding (10k-pods at 20679f0: 43 and 8
// pods bound in the main pass's first two seconds, apiserver at 1.15 and
// 1.31 cores). Collecting before every pass starts each one at the same
// point of the collector's cycle.
func (c *simulatedCluster) collectGarbage(ctx context.Context) error {
	start := time.Now()
	runtime.GC()
	err := c.kube.client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("collecting kube-apiserver's garbage (GET /debug/pprof/heap?gc=1): %w", err)
	}
	c.logf("garbage collected in %.1fs", time.Since(start).Seconds())
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
