// Command fakeregistry serves a fake multi-arch OCI registry from a catalog file, for manual use with
// podman, skopeo, crane or the operator.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

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

// serveFlags are the flags of the serve command.
type serveFlags struct {
	catalog  string
	addr     string
	tls      bool
	hostname string
	certsDir string
	verbose  bool
}

// newServeCommand builds the serve command.
func newServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --catalog FILE [--tls] [--addr HOST:PORT]",
		Short: "Serve a catalog until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), cmd, f)
		},
	}
	cmd.Flags().StringVar(&f.catalog, "catalog", "", "catalog YAML file (required)")
	cmd.Flags().StringVar(&f.addr, "addr", "127.0.0.1:5000", "listen address")
	cmd.Flags().BoolVar(&f.tls, "tls", false, "serve HTTPS with a CA generated at start")
	cmd.Flags().StringVar(&f.hostname, "hostname", fakeregistry.DefaultTLSHostname, "extra DNS name in the serving certificate")
	cmd.Flags().StringVar(&f.certsDir, "certs-dir", "", "with --tls, write the CA as <dir>/<host:port>/ca.crt (certs.d layout)")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "log to stderr")
	_ = cmd.MarkFlagRequired("catalog")
	return cmd
}

// serve starts the registry and blocks until ctx is done.
func serve(ctx context.Context, cmd *cobra.Command, f serveFlags) error {
	catalog, err := fakeregistry.LoadCatalog(f.catalog)
	if err != nil {
		return err
	}
	logger := slog.New(slog.DiscardHandler)
	if f.verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	reg, err := fakeregistry.Start(ctx, fakeregistry.Options{
		Catalog: catalog, Addr: f.addr, TLS: f.tls, TLSHostname: f.hostname, Logger: logger,
	})
	if err != nil {
		return fmt.Errorf("starting registry: %w", err)
	}
	defer func() { _ = reg.Close() }()
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "serving %d images at %s\n", len(catalog.Images()), reg.URL())
	if f.tls && f.certsDir != "" {
		dir, err := reg.WriteCertsDir(f.certsDir)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "CA written to %s/ca.crt\n", dir)
	}
	for _, im := range catalog.Images() {
		for _, t := range im.Tags {
			fmt.Fprintf(out, "  %s  %s  %s\n", reg.Reference(im.Repository, t), im.Format, im.Digest)
		}
	}
	<-ctx.Done()
	return nil
}
