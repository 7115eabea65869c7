// Command fakeregistry serves a fake multi-arch OCI registry from a catalog file, for manual use with
// podman, skopeo, crane or the operator.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/archgate/archgate/fakeregistry"
)

func main() {
	os.Exit(run())
}

// run executes the command line and returns the exit code.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		return 1
	}
	return 0
}

// newRootCommand builds the fakeregistry command tree.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "fakeregistry",
		Short:         "Fake multi-arch OCI registry for archgate tests and manual checks",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(newServeCommand())
	return root
}

// newServeCommand builds the serve command.
func newServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [--catalog FILE] [--layout REPOSITORY=DIR ...] [--writable [--no-delete]] [--tls [--certs-dir DIR]] [--auth-mode MODE ...] [faults]",
		Short: "Serve a catalog until interrupted",
		Long: "Serve a catalog until interrupted. Request kinds for --latency and --fault-kinds: " + kindNames() +
			". Repository patterns: path.Match globs plus ** (everything) and prefix/** (everything below prefix).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changedFlags = func(name string) bool { return cmd.Flags().Changed(name) }
			return serve(cmd.Context(), cmd, &f)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// serve starts the registry and blocks until ctx is done.
func serve(ctx context.Context, cmd *cobra.Command, f *serveFlags) error {
	opts, err := f.options()
	if err != nil {
		return err
	}
	if opts.Catalog, err = f.loadCatalog(); err != nil {
		return err
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	if f.verbose {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	reg, err := fakeregistry.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("starting registry: %w", err)
	}
	defer func() { _ = reg.Close() }()
	out := cmd.OutOrStdout()
	images := reg.Catalog().Images()
	if len(images) == 0 && !f.writable {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning: the catalog is empty and the registry is read-only: it serves nothing (pass --catalog FILE, --layout REPOSITORY=DIR or --writable)")
	}
	fmt.Fprintf(out, "serving %d images at %s (writable %t, auth %q)\n", len(images), reg.URL(), f.writable, opts.Auth.Mode)
	if f.certsDir != "" {
		dir, err := reg.WriteCertsDir(f.certsDir)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "CA written to %s/ca.crt\n", dir)
	}
	for _, im := range images {
		for _, t := range im.Tags {
			fmt.Fprintf(out, "  %s  %s  %s\n", reg.Reference(im.Repository, t), im.Format, im.Digest)
		}
	}
	if f.metricsAddr != "" {
		stop, err := serveMetrics(f.metricsAddr, reg.Counters().Handler())
		if err != nil {
			return err
		}
		defer stop()
		fmt.Fprintf(out, "counters served at %s/metrics\n", f.metricsAddr)
	}
	<-ctx.Done()
	return nil
}

// serveMetrics serves handler at /metrics on addr: HOST:PORT, or unix:PATH for a Unix socket (a
// process outside the registry's network namespace reaches it through the file system, as the
// simulator reads the real-node cluster's registry). It returns the function that stops it.
func serveMetrics(addr string, handler http.Handler) (func(), error) {
	network, address := "tcp", addr
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, address = "unix", path
		// A socket file left by a killed registry would make Listen fail.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
		}
	}
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}
