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
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archgate/archgate/operator/internal/hostfiles"
)

// newCopyHostFilesCmd returns `archgate copy-host-files`: the init container of the
// controller's Deployment with credentialProviders.hostFiles, copying the mounted host files
// into the controller's memory-backed emptyDir for the controller's user alone.
func newCopyHostFilesCmd(*globalFlags) *cobra.Command {
	var o hostfiles.Options
	var files []string
	var owner string
	cmd := &cobra.Command{
		Use:   "copy-host-files",
		Short: "Copy host files for the credential provider plugins into the controller's pod",
		Args:  cobra.NoArgs,
		// An init container the operator renders, not a command for users: left out of the help.
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			var err error
			if o.UID, o.GID, err = parseOwner(owner); err != nil {
				return err
			}
			for _, f := range files {
				name, hostPath, ok := strings.Cut(f, "=")
				if !ok || name == "" || hostPath == "" {
					return fmt.Errorf("--file %q: want name=host-path", f)
				}
				o.Files = append(o.Files, hostfiles.File{Name: name, HostPath: hostPath})
			}
			return hostfiles.Copy(o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.FromDir, "from-dir", "", "Directory where each host file is mounted under its name.")
	fs.StringVar(&o.ToDir, "to", "", "Directory that receives the copies, each under its name.")
	fs.StringArrayVar(&files, "file", nil, "A file to copy, as name=host-path: read from --from-dir/name, written to --to/name; errors name host-path. Repeatable.")
	fs.StringVar(&owner, "owner", "", "Numeric uid:gid that owns the copies (mode 0400).")
	for _, f := range []string{"from-dir", "to", "owner"} {
		_ = cmd.MarkFlagRequired(f) // only fails for a flag that does not exist
	}
	return cmd
}

// parseOwner parses a numeric "uid:gid".
func parseOwner(s string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(s, ":")
	uid, uerr := strconv.Atoi(u)
	gid, gerr := strconv.Atoi(g)
	if !ok || uerr != nil || gerr != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("--owner %q: want numeric uid:gid", s)
	}
	return uid, gid, nil
}
