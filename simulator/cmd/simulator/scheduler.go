package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/scheduler"
)

// newSchedulerCommand returns `simulator scheduler`: the embedded
// kube-scheduler as a process of its own, which `run` starts so that the
// report can state the scheduler's CPU and memory apart from the harness's.
// It serves /readyz, /metrics and /debug/pprof on --bind-address.
func newSchedulerCommand() *cobra.Command {
	var kubeconfig, bind string
	var qps float32
	var burst int
	var opts scheduler.Options
	cmd := &cobra.Command{
		Use:    "scheduler --kubeconfig FILE --bind-address HOST:PORT",
		Short:  "Run the embedded kube-scheduler as a process (started by run)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			cfg.QPS, cfg.Burst = qps, burst
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			ln, err := net.Listen("tcp", bind)
			if err != nil {
				return err
			}
			s, err := scheduler.Start(ctx, cfg, opts)
			if err != nil {
				ln.Close()
				return err
			}
			srv := &http.Server{Handler: schedulerMux()}
			go func() { _ = srv.Serve(ln) }()
			<-ctx.Done()
			s.Stop()
			if err := srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("closing the metrics server: %w", err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	fl.StringVar(&bind, "bind-address", "127.0.0.1:0", "address of /readyz, /metrics and /debug/pprof")
	// scheduler_perf's client limits: the apiserver, not client-side
	// throttling, must be what limits the scheduler.
	fl.Float32Var(&qps, "kube-api-qps", testenv.DefaultQPS, "client rate limit towards the apiserver")
	fl.IntVar(&burst, "kube-api-burst", testenv.DefaultBurst, "client burst towards the apiserver")
	fl.Int32Var(&opts.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0, "0 keeps the scheduler's adaptive default")
	fl.BoolVar(&opts.DisableEvents, "disable-events", false, "skip the scheduler's per-pod Events")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

// schedulerMux serves readiness (the scheduler started only once its
// informers synced), the scheduler's metrics and pprof.
func schedulerMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.Handle("/metrics", legacyregistry.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	return mux
}

// newBurnCommand returns `simulator burn`: the scenarios' background load,
// a busy loop at a share of one core (see procs.Burn).
func newBurnCommand() *cobra.Command {
	var share float64
	cmd := &cobra.Command{
		Use:    "burn --share 0.25",
		Short:  "Keep a share of one CPU busy until stopped (started by run for scenario background load)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return procs.Burn(ctx, share)
		},
	}
	cmd.Flags().Float64Var(&share, "share", 0.25, "share of one CPU to keep busy, in (0, 1]")
	return cmd
}
