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

// Package hostfiles copies the node files that credential provider plugins read
// (credentialProviders.hostFiles, e.g. AKS's /etc/kubernetes/azure.json, root-only on the
// nodes) for the controller: the init container of the controller's Deployment runs Copy as
// root from the files' read-only hostPath mounts into a memory-backed emptyDir, giving each
// copy to the controller's user alone, so that the controller itself stays non-root without
// capabilities.
package hostfiles

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MaxSize bounds each file: a cloud configuration such as azure.json is a few KiB, and the
// copies live in memory (an emptyDir of medium Memory).
const MaxSize = 64 << 10

// Mode is the mode of the copies: readable by their owner, the controller, and nobody else.
const Mode fs.FileMode = 0o400

// File is one host file to copy.
type File struct {
	// Name is the file's name both in Options.FromDir (where its hostPath is mounted) and in
	// Options.ToDir (its copy): a plain name, no path.
	Name string
	// HostPath is the file's path on the node, the one errors name: what the admin wrote.
	HostPath string
}

// Options say what Copy copies, where to, and for whom.
type Options struct {
	// FromDir holds the files to read, each under its File.Name.
	FromDir string
	// ToDir receives the copies, each under its File.Name.
	ToDir string
	// Files are the files to copy.
	Files []File
	// UID and GID own the copies: the controller's user and group.
	UID, GID int
}

// Copy copies every file of o, replacing earlier copies (an init container runs again in the
// same pod, with the same emptyDir). A file that is missing, not a regular file, a symbolic
// link or larger than MaxSize is not copied; the error names each such file's host path.
func Copy(o Options) error {
	var errs []error
	for _, f := range o.Files {
		if err := copyFile(o, f); err != nil {
			errs = append(errs, fmt.Errorf("host file %s: %w", f.HostPath, err))
		}
	}
	return errors.Join(errs...)
}

func copyFile(o Options, f File) error {
	if f.Name == "" || f.Name == "." || f.Name == ".." || filepath.Base(f.Name) != f.Name {
		return fmt.Errorf("name %q is not a plain file name", f.Name)
	}
	data, err := read(filepath.Join(o.FromDir, f.Name))
	if err != nil {
		return err
	}
	return write(o.ToDir, f.Name, data, o.UID, o.GID)
}

// read returns the content of the regular file at path, at most MaxSize bytes. The file is
// opened with O_NOFOLLOW, not checked with Lstat first: a check and a later open could see two
// different files. A link is refused because the reader is root with DAC_READ_SEARCH: followed,
// it would read whatever the link names instead of the file mounted (the kubelet resolves links
// on the node before it mounts a hostPath, so a mounted file is never one). O_NONBLOCK keeps a
// FIFO in its place from hanging the pod's start.
func read(path string) ([]byte, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, which is not followed", path)
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (mode %s)", path, info.Mode())
	}
	// Read one byte past the bound: the size can change between Stat and the read.
	data, err := io.ReadAll(io.LimitReader(file, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if info.Size() > MaxSize || len(data) > MaxSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxSize)
	}
	return data, nil
}

// write puts data in dir/name, owned by uid:gid with Mode, through a new temporary file renamed
// over it: nothing is ever written through a link or into a file someone else created, and a
// reader sees the old copy or the new one, never half of one. The mode is set before the owner
// is changed, so that the only capability this needs, beyond writing dir, is CHOWN.
func write(dir, name string, data []byte, uid, gid int) (err error) {
	tmp, err := os.CreateTemp(dir, "."+name+".*") // O_EXCL, mode 0600: only root can read it meanwhile
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(Mode); err != nil {
		return err
	}
	if err = tmp.Chown(uid, gid); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}
