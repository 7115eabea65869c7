package fakeregistry

import (
	"fmt"
	"strings"
)

// Platform is one os/architecture[/variant] entry of an image, as docker and podman spell it.
type Platform struct {
	// OS is the operating system, e.g. linux or windows.
	OS string
	// Architecture is the GOARCH-style CPU architecture, e.g. amd64 or arm64.
	Architecture string
	// Variant is the optional CPU variant, e.g. v7 for arm or v8 for arm64.
	Variant string
}

// String returns the platform in its os/architecture[/variant] form.
func (p Platform) String() string {
	if p.Variant == "" {
		return p.OS + "/" + p.Architecture
	}
	return p.OS + "/" + p.Architecture + "/" + p.Variant
}

// ParsePlatform parses and validates a platform written as os/architecture[/variant].
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return Platform{}, fmt.Errorf("platform %q: want os/architecture[/variant]", s)
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	if !knownOS(p.OS) {
		return Platform{}, fmt.Errorf("platform %q: unknown os %q", s, p.OS)
	}
	if !knownArch(p.Architecture) {
		return Platform{}, fmt.Errorf("platform %q: unknown architecture %q", s, p.Architecture)
	}
	if len(parts) == 3 && !knownVariant(p.Architecture, p.Variant) {
		return Platform{}, fmt.Errorf("platform %q: unknown variant %q for architecture %q", s, p.Variant, p.Architecture)
	}
	return p, nil
}

// knownOS reports whether os is an operating system image indexes use.
func knownOS(os string) bool {
	switch os {
	case "linux", "windows", "darwin", "freebsd", "netbsd", "openbsd", "solaris", "illumos", "aix", "plan9", "wasip1", "js":
		return true
	}
	return false
}

// knownArch reports whether arch is a GOARCH value that image indexes use.
func knownArch(arch string) bool {
	switch arch {
	case "386", "amd64", "arm", "arm64", "loong64", "mips", "mipsle", "mips64", "mips64le",
		"ppc64", "ppc64le", "riscv64", "s390x", "wasm":
		return true
	}
	return false
}

// knownVariant reports whether variant is a CPU variant of arch (OCI image-index spec values).
func knownVariant(arch, variant string) bool {
	switch arch {
	case "arm":
		switch variant {
		case "v5", "v6", "v7", "v8":
			return true
		}
	case "arm64":
		for _, major := range []string{"v8", "v9"} {
			if variant == major {
				return true
			}
			minor, ok := strings.CutPrefix(variant, major+".")
			if ok && len(minor) == 1 && minor[0] >= '0' && minor[0] <= '9' {
				return true
			}
		}
	case "amd64":
		switch variant {
		case "v1", "v2", "v3", "v4":
			return true
		}
	}
	return false
}
