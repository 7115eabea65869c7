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

package knownimages

import (
	"strings"

	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
)

// WithoutDockerHub returns src without its docker.io images. The webhook and the admission
// policy read a short name ("nginx") as docker.io, as the kubelet with containerd does; where
// registries.conf resolves short names elsewhere (inspect.ShortNames.Remapped), publishing
// docker.io's answer would place such pods with another image's architectures, so their pods
// are left to the controller, which resolves them as the runtime does.
func WithoutDockerHub(src Source) Source { return withoutDockerHub{src} }

type withoutDockerHub struct{ Source }

// KnownImages returns the source's images but docker.io's.
func (w withoutDockerHub) KnownImages(identities func(ref string) []credentials.Identity) []inspect.KnownImage {
	all := w.Source.KnownImages(identities)
	out := all[:0:0]
	for _, k := range all {
		if !strings.HasPrefix(k.Ref, "docker.io/") {
			out = append(out, k)
		}
	}
	return out
}
