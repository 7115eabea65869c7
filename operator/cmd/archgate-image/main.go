/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command archgate-image packages cross-compiled archgate binaries as a multi-architecture OCI
// image index (an OCI layout on disk) and pushes it to a registry: `make image` and `make push`
// call it. It is a build tool, not part of the deployed image.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/archgate/archgate/operator/internal/ownimage"
)

func main() { os.Exit(run()) }

// run executes the command line and returns the exit code; deferred cleanup runs before exit.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{Use: "archgate-image", Short: "Build and push archgate's multi-architecture image", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newBuildCmd(), newPushCmd(), newDigestCmd())
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "archgate-image:", err)
		return 1
	}
	return 0
}

type buildFlags struct {
	out, tag    string
	path        string
	binaries    []string
	createdUnix int64
	annotations map[string]string
}

func newBuildCmd() *cobra.Command {
	var f buildFlags
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Write the image index of the given binaries as an OCI layout",
		RunE:  func(cmd *cobra.Command, _ []string) error { return build(cmd, f) },
	}
	cmd.Flags().StringVar(&f.out, "out", "bin/image", "OCI layout directory (replaced)")
	cmd.Flags().StringVar(&f.tag, "tag", "latest", "tag of the index inside the layout")
	cmd.Flags().StringArrayVar(&f.binaries, "binary", nil, "os/arch[/variant]=path of one platform's binary (repeat per platform)")
	cmd.Flags().StringVar(&f.path, "path", ownimage.BinaryPath, "path of the binary in the image, also its entrypoint")
	cmd.Flags().Int64Var(&f.createdUnix, "created", 0, "creation time and file mtime, Unix seconds (the commit time, for reproducible digests)")
	cmd.Flags().StringToStringVar(&f.annotations, "annotation", nil, "index annotation key=value (repeatable)")
	return cmd
}

func build(cmd *cobra.Command, f buildFlags) error {
	var bins []ownimage.Binary
	for _, spec := range f.binaries {
		plat, path, ok := strings.Cut(spec, "=")
		if !ok {
			return fmt.Errorf("--binary %q: want os/arch[/variant]=path", spec)
		}
		p, err := v1.ParsePlatform(plat)
		if err != nil {
			return fmt.Errorf("--binary %q: platform %q: %w", spec, plat, err)
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--binary %q: %w", spec, err)
		}
		bins = append(bins, ownimage.Binary{Platform: *p, Content: content})
	}
	idx, err := ownimage.BuildIndex(ownimage.Options{
		Binaries:    bins,
		CABundle:    ownimage.MozillaRoots(),
		Created:     time.Unix(f.createdUnix, 0).UTC(),
		BinaryPath:  f.path,
		Annotations: f.annotations,
	})
	if err != nil {
		return err
	}
	if err := ownimage.WriteLayout(f.out, idx, f.tag); err != nil {
		return err
	}
	return describe(cmd, idx, "wrote "+f.out+":"+f.tag)
}

func newPushCmd() *cobra.Command {
	var layoutDir, tag string
	cmd := &cobra.Command{
		Use:   "push IMAGE",
		Short: "Push the index of an OCI layout to a registry (credentials from the Docker/podman config)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			idx, err := ownimage.ReadLayout(layoutDir, tag)
			if err != nil {
				return err
			}
			if _, err := ownimage.Push(cmd.Context(), idx, args[0]); err != nil {
				return err
			}
			return describe(cmd, idx, "pushed "+args[0])
		},
	}
	layoutFlags(cmd, &layoutDir, &tag)
	return cmd
}

func newDigestCmd() *cobra.Command {
	var layoutDir, tag string
	cmd := &cobra.Command{
		Use:   "digest",
		Short: "Print the digest of the index of an OCI layout (what a deployment pins: IMAGE@DIGEST)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			idx, err := ownimage.ReadLayout(layoutDir, tag)
			if err != nil {
				return err
			}
			d, err := idx.Digest()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), d)
			return err
		},
	}
	layoutFlags(cmd, &layoutDir, &tag)
	return cmd
}

// layoutFlags binds the flags that name an index inside an OCI layout written by build.
func layoutFlags(cmd *cobra.Command, dir, tag *string) {
	cmd.Flags().StringVar(dir, "layout", "bin/image", "OCI layout directory written by build")
	cmd.Flags().StringVar(tag, "tag", "latest", "tag of the index inside the layout")
}

// describe prints what was written: the index digest (what a deployment pins) and its platforms.
func describe(cmd *cobra.Command, idx v1.ImageIndex, what string) error {
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	platforms, err := ownimage.Platforms(idx)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: index %s, platforms %s\n", what, d, strings.Join(platforms, " "))
	return nil
}
