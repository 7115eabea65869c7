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

package ownimage

import (
	"archive/tar"
	"bytes"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// file is one regular file of a layer.
type file struct {
	path    string
	mode    int64
	content []byte
}

// layerOf writes files (and their parent directories) into a tar whose bytes depend only on
// the input: entries sorted by name, one fixed mtime, owner root, no user or group names, PAX
// records off. go-containerregistry's tarball layer then gzips it deterministically.
// archive/tar is used directly because ggcr has no "layer from these files" helper that pins
// these fields.
func layerOf(files []file, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range headers(files, mtime) {
		if err := tw.WriteHeader(h.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(h.content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

type entry struct {
	hdr     *tar.Header
	content []byte
}

// headers returns the tar entries of files and their parent directories, sorted by name.
func headers(files []file, mtime time.Time) []entry {
	dirs := map[string]bool{}
	var out []entry
	for _, f := range files {
		name := strings.TrimPrefix(path.Clean(f.path), "/")
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			out = append(out, entry{hdr: header(d+"/", tar.TypeDir, 0o755, 0, mtime)})
		}
		out = append(out, entry{hdr: header(name, tar.TypeReg, f.mode, int64(len(f.content)), mtime), content: f.content})
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.hdr.Name, b.hdr.Name) })
	return out
}

func header(name string, typ byte, mode, size int64, mtime time.Time) *tar.Header {
	return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: mtime, Format: tar.FormatUSTAR}
}
