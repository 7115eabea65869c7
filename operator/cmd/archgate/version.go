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

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/archgate/archgate/operator/internal/version"
)

// newVersionCmd returns `archgate version`: the binary's release version, commit, Go version
// and platform.
func newVersionCmd(*globalFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print archgate's version, commit, Go version and platform",
		Example: `  archgate version
  archgate version -o json`,
		Args: cobra.NoArgs,
		// No logging set-up, no cluster: it must answer even where nothing else works.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output == "" {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Get())
				return err
			}
			return printData(cmd.OutOrStdout(), version.Get(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: empty for one line, json or yaml.")
	return cmd
}
