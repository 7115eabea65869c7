package runner

import (
	"context"
	"os"
	"time"

	"github.com/archgate/archgate/operator/pkg/testenv/procfs"
)

// Settling: the machine counts as quiet for the next pass when the
// simulator, kube-apiserver and etcd together use less than settleCPU cores
// for settleQuiet in a row; after settleMax the pass starts anyway.
const (
	settleCPU   = 0.3
	settleQuiet = 2 * time.Second
	settleMax   = 90 * time.Second
)

// settle waits until the control plane and the simulator are idle. Against
// an existing cluster (--kubeconfig) their processes are not visible: it
// waits a fixed settleQuiet·5.
func (r *run) settle(ctx context.Context) error {
	start := time.Now()
	if r.opts.Kubeconfig != "" {
		return sleep(ctx, 5*settleQuiet)
	}
	cpu := func() time.Duration {
		var total time.Duration
		if self, ok := procfs.Read(os.Getpid()); ok {
			total += self.CPU
		}
		for _, c := range procfs.Children(os.Getpid()) {
			if c.Name == "kube-apiserver" || c.Name == "etcd" {
				total += c.CPU
			}
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
	r.logf("settled in %.0fs", time.Since(start).Seconds())
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
