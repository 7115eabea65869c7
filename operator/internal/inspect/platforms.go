package inspect

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	imgspecv1 "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/manifest"
)

// Platform is what placement needs from one entry of a manifest list or OCI index.
type Platform struct {
	OS           string
	Architecture string
	Variant      string
	Annotations  map[string]string
	// Digest and MediaType name the manifest the entry points to (empty outside an index), so
	// that an entry without a platform can be resolved (RegistryInspector.resolveEntries).
	Digest    string
	MediaType string
}

// known reports whether the entry says what it runs on.
func (p Platform) known() bool { return p.OS != "" || p.Architecture != "" }

// attestationAnnotation marks BuildKit attestation (SBOM, provenance) entries of an index.
const (
	attestationAnnotation = "vnd.docker.reference.type"
	attestationValue      = "attestation-manifest"
)

// noBinaryLabels are image config labels of images that carry no executables (OLM operator
// bundles): such an image runs nowhere and so is no reason to restrict a pod's architecture.
var noBinaryLabels = []string{"operators.operatorframework.io.bundle.mediatype.v1"}

// archAliases maps the architecture names found in the wild (uname, Debian, RPM) to the
// GOARCH names that the kubernetes.io/arch node label uses.
var archAliases = map[string]string{
	"x86_64":  "amd64",
	"x86-64":  "amd64",
	"x64":     "amd64",
	"aarch64": "arm64",
	"arm64v8": "arm64",
	"armhf":   "arm",
	"armel":   "arm",
	"armv6l":  "arm",
	"armv7l":  "arm",
	"armv7":   "arm",
	"armv8l":  "arm", // 32-bit user space on an ARMv8 CPU
	"i386":    "386",
	"i486":    "386",
	"i586":    "386",
	"i686":    "386",
	"x86":     "386",
	"ppc64el": "ppc64le",
}

// NormalizeArchitecture returns the kubernetes.io/arch value for an image architecture:
// lower-cased, aliases resolved (aarch64 → arm64, x86_64 → amd64), and any variant dropped
// (arm64/v8 → arm64, arm/v7 → arm, amd64/v3 → amd64), because node labels carry no variant.
// It returns "" for an empty or unknown ("unknown") architecture.
func NormalizeArchitecture(arch string) string {
	a, _, _ := strings.Cut(arch, "/")
	a = strings.ToLower(strings.TrimSpace(a))
	if alias, ok := archAliases[a]; ok {
		a = alias
	}
	if a == "unknown" {
		return ""
	}
	return a
}

// isAttestation reports whether an index entry is an attestation rather than an image:
// BuildKit marks those with an annotation and an "unknown/unknown" platform.
func isAttestation(p Platform) bool {
	if p.Annotations[attestationAnnotation] == attestationValue {
		return true
	}
	return strings.EqualFold(p.OS, "unknown") || strings.EqualFold(p.Architecture, "unknown")
}

// LinuxArchitectures returns the sorted set of normalised architectures of the linux entries
// of a manifest list. Attestations, non-linux entries (windows, …), entries without a
// platform or without an architecture are skipped. The result is empty (not nil) when
// nothing is left: such an image has no linux architecture.
func LinuxArchitectures(platforms []Platform) []string {
	out := []string{}
	for _, p := range platforms {
		if isAttestation(p) || !strings.EqualFold(strings.TrimSpace(p.OS), "linux") {
			continue
		}
		if a := NormalizeArchitecture(p.Architecture); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// OSPlatforms returns the sorted set of "os/arch" pairs of every entry of a manifest list, any
// operating system (normalised: lower-cased OS, kubernetes.io/arch architecture), for placement
// that constrains kubernetes.io/os too. Attestations and entries without an OS or an
// architecture are skipped.
func OSPlatforms(platforms []Platform) []string {
	out := []string{}
	for _, p := range platforms {
		if isAttestation(p) {
			continue
		}
		if pair := osPlatform(p.OS, p.Architecture); pair != "" && !slices.Contains(out, pair) {
			out = append(out, pair)
		}
	}
	slices.Sort(out)
	return out
}

// ConfigPlatforms returns the "os/arch" pair of a single-image manifest from its config (an
// unset OS is linux, as for ConfigArchitectures); none when the architecture is unknown.
func ConfigPlatforms(os, arch string) []string {
	if pair := osPlatform(cmp.Or(strings.TrimSpace(os), "linux"), arch); pair != "" {
		return []string{pair}
	}
	return []string{}
}

// osPlatform is "os/arch" with both normalised, or "" when either is missing.
func osPlatform(os, arch string) string {
	o, a := strings.ToLower(strings.TrimSpace(os)), NormalizeArchitecture(arch)
	if o == "" || o == "unknown" || a == "" {
		return ""
	}
	return o + "/" + a
}

// ConfigArchitectures returns the architectures of a single-image manifest from its config:
// its normalised architecture when the OS is linux or unset, otherwise none.
func ConfigArchitectures(os, arch string) []string {
	o := strings.ToLower(strings.TrimSpace(os))
	if o != "" && o != "linux" {
		return []string{}
	}
	if a := NormalizeArchitecture(arch); a != "" {
		return []string{a}
	}
	return []string{}
}

// HasNoBinaries reports whether image config labels mark an image without executables.
func HasNoBinaries(labels map[string]string) bool {
	for _, l := range noBinaryLabels {
		if _, ok := labels[l]; ok {
			return true
		}
	}
	return false
}

// PlatformsFromBlob parses a manifest list or OCI index by its media type and returns the
// platform of every entry, in order, duplicates included: an index may list one digest under
// several platforms, and each counts. (podman's generic manifest.List looks entries up by
// digest, which repeats the first entry's platform; the typed parsers keep every descriptor.)
// An entry without a platform gives a zero Platform, which LinuxArchitectures skips.
func PlatformsFromBlob(blob []byte, mimeType string) ([]Platform, error) {
	switch mt := manifest.NormalizedMIMEType(mimeType); mt {
	case imgspecv1.MediaTypeImageIndex:
		idx, err := manifest.OCI1IndexFromManifest(blob)
		if err != nil {
			return nil, err
		}
		out := make([]Platform, 0, len(idx.Manifests))
		for _, d := range idx.Manifests {
			p := Platform{Annotations: d.Annotations, Digest: d.Digest.String(), MediaType: d.MediaType}
			if d.Platform != nil {
				p.OS, p.Architecture, p.Variant = d.Platform.OS, d.Platform.Architecture, d.Platform.Variant
			}
			out = append(out, p)
		}
		return out, nil
	case manifest.DockerV2ListMediaType:
		list, err := manifest.Schema2ListFromManifest(blob)
		if err != nil {
			return nil, err
		}
		out := make([]Platform, 0, len(list.Manifests))
		for _, d := range list.Manifests {
			out = append(out, Platform{OS: d.Platform.OS, Architecture: d.Platform.Architecture, Variant: d.Platform.Variant,
				Digest: d.Digest.String(), MediaType: d.MediaType})
		}
		return out, nil
	default:
		return nil, fmt.Errorf("media type %q is not a manifest list or an OCI image index", mimeType)
	}
}

// ArchitecturesFromList parses a manifest list or OCI index blob of the given MIME type and
// returns LinuxArchitectures of its entries; entries without a platform are left out (the
// inspector resolves them first, resolveEntries).
func ArchitecturesFromList(blob []byte, mimeType string) ([]string, error) {
	platforms, err := PlatformsFromBlob(blob, mimeType)
	if err != nil {
		return nil, err
	}
	return LinuxArchitectures(platforms), nil
}
