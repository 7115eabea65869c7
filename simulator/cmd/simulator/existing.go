package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/simulator/internal/existing"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// newCatalogCommand writes the registry catalog that serves the given scenarios' images, for a
// cluster's registry (make cluster-up serves it as CLUSTER_REGISTRY_CATALOG).
func newCatalogCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "catalog --out FILE SCENARIO...",
		Short: "Write one fakeregistry catalog with the images of every scenario given, for an existing cluster's registry",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var names []string
			var specs []fakeregistry.CatalogSpec
			for _, a := range args {
				l, err := scenario.Load(a)
				if err != nil {
					return &exitError{code: exitUsage, err: err}
				}
				spec, err := existing.CatalogSpec(l)
				if err != nil {
					return &exitError{code: exitUsage, err: err}
				}
				names, specs = append(names, a), append(specs, spec)
			}
			merged, err := existing.MergeCatalogs(names, specs)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			data, err := yaml.Marshal(merged)
			if err != nil {
				return err
			}
			header := fmt.Sprintf("# Written by simulator catalog from %v: the registry content of those scenarios.\n", args)
			return os.WriteFile(out, append([]byte(header), data...), 0o644)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "catalog file to write (required)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// newCleanupCommand removes what a run against an existing cluster left (a run killed by a
// second interrupt or a signal it cannot catch).
func newCleanupCommand() *cobra.Command {
	var kubeconfig, runID string
	cmd := &cobra.Command{
		Use:   "cleanup --kubeconfig FILE --run ID",
		Short: "Remove what a run against an existing cluster created (everything labelled sim.archgate.io/run=ID)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cleanup(cmd.Context(), kubeconfig, runID)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (required)")
	cmd.Flags().StringVar(&runID, "run", "", "the run's id, as its report and nodes name it (required)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	_ = cmd.MarkFlagRequired("run")
	return cmd
}

func cleanup(ctx context.Context, kubeconfig, runID string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--kubeconfig: %w", err)}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1beta1.AddToScheme(scheme)); err != nil {
		return err
	}
	crc, err := crclient.New(cfg, crclient.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	root, err := testenv.RepositoryRoot()
	if err != nil {
		return err
	}
	c := existing.Cleaner{Client: client, CRC: crc, RepoRoot: root, Kubeconfig: kubeconfig, RunID: runID,
		Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }}
	if err := c.Clean(ctx); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	return nil
}
