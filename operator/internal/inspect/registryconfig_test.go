package inspect

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateRegistriesConf(t *testing.T) {
	tests := map[string]struct {
		conf    string
		dropIn  string // a registries.conf.d/mirror-sets.conf beside conf when set
		wantErr string // substring; "" means valid
	}{
		"empty": {conf: ""},
		"with a drop-in": {conf: "[[registry]]\nlocation = \"docker.io\"\n",
			dropIn: "[[registry]]\nprefix = \"docker.io\"\nlocation = \"docker.io\"\nblocked = true\n\n[[registry.mirror]]\nlocation = \"mirror.example\"\npull-from-mirror = \"digest-only\"\n"},
		"a drop-in podman refuses is named": {dropIn: "[[registry]]\nprefix = \"docker.io\"\npull-from-mirror = \"tag-only\"\n",
			wantErr: "registries.conf.d/mirror-sets.conf"},
		"mirrors": {conf: "[[registry]]\nlocation = \"docker.io\"\n\n[[registry.mirror]]\nlocation = \"mirror.example/docker\"\n"},
		"blocked and insecure": {
			conf: "[[registry]]\nlocation = \"evil.example\"\nblocked = true\n\n[[registry]]\nlocation = \"lab.example:5000\"\ninsecure = true\n",
		},
		"not TOML":               {conf: "[[registry]\nlocation = ", wantErr: "invalid registries.conf"},
		"wrong type":             {conf: "[[registry]]\nlocation = 5\n", wantErr: "invalid registries.conf"},
		"location with a scheme": {conf: "[[registry]]\nlocation = \"https://registry.example\"\n", wantErr: "invalid registries.conf"},
		"the temporary path is not in the message": {
			conf: "[[registry]\n", wantErr: "registries.conf",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := ValidateRegistriesConf([]byte(tc.conf))
			if tc.dropIn != "" {
				err = ValidateRegistriesConfWithDropIn([]byte(tc.conf), "mirror-sets.conf", []byte(tc.dropIn))
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ValidateRegistriesConf: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ValidateRegistriesConf error %v, want one containing %q", err, tc.wantErr)
			case err != nil && strings.Contains(err.Error(), "archgate-registries-conf-"):
				t.Errorf("error names the temporary file: %v", err)
			}
		})
	}
}

func TestParseCertificates(t *testing.T) {
	reg := newTestRegistry(t)
	ca := string(reg.caPEM())
	tests := map[string]struct {
		bundle    string
		wantCerts int
		wantErr   string
	}{
		"one certificate":           {bundle: ca, wantCerts: 1},
		"two certificates":          {bundle: ca + "\n" + ca, wantCerts: 2},
		"surrounding whitespace":    {bundle: "\n\n" + ca + "\n\n", wantCerts: 1},
		"empty":                     {bundle: "", wantErr: "no certificate: the bundle is empty"},
		"not PEM (DER as text)":     {bundle: "MIIB...not pem", wantErr: "not PEM: no -----BEGIN CERTIFICATE----- block found"},
		"garbage after certificate": {bundle: ca + "garbage", wantErr: "text that is not PEM after certificate 1"},
		"a private key": {
			bundle:  "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
			wantErr: `PEM block 1 is a "PRIVATE KEY", want CERTIFICATE`,
		},
		"a broken certificate": {
			bundle:  ca + "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
			wantErr: "PEM block 2: x509:",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			certs, err := ParseCertificates([]byte(tc.bundle))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(certs) != tc.wantCerts {
				t.Fatalf("%d certificates, error %v; want %d", len(certs), err, tc.wantCerts)
			}
		})
	}
}

// TestRegistryInspectorBlocked: a blocked registry fails at once as ReasonBlocked, without a
// request; with a mirror, the mirror serves the image.
func TestRegistryInspectorBlocked(t *testing.T) {
	reg := newTestRegistry(t)
	reg.pushImage("app:1", imageOf("linux", "arm64").build(t))
	cfg := newPodmanConfig(t, sprintfConf("[[registry]]\nlocation = \"%s\"\nblocked = true\n", reg.host))
	cfg.trust(t, reg)
	_, err := mustInspector(t, cfg.options()).Architectures(context.Background(), reg.host+"/app:1", nil)
	var ie *Error
	if !errors.As(err, &ie) || ie.Reason != ReasonBlocked || !strings.Contains(err.Error(), "is blocked in") {
		t.Fatalf("error %v, want a %s inspection error", err, ReasonBlocked)
	}
	if n := reg.manifestGets.Load(); n != 0 {
		t.Errorf("%d manifest requests to a blocked registry", n)
	}

	mirror := newTestRegistry(t)
	mirror.pushImage("app:1", imageOf("linux", "s390x").build(t))
	cfg = newPodmanConfig(t, sprintfConf("[[registry]]\nlocation = \"%s\"\nblocked = true\n\n[[registry.mirror]]\nlocation = \"%s\"\n", reg.host, mirror.host))
	cfg.trust(t, mirror)
	ReloadRegistriesConf()
	got, err := mustInspector(t, cfg.options()).Architectures(context.Background(), reg.host+"/app:1", nil)
	if err != nil || len(got.Architectures) != 1 || got.Architectures[0] != "s390x" {
		t.Fatalf("through the mirror: %v, %v; want s390x", got.Architectures, err)
	}
}

// FuzzValidateRegistriesConf: arbitrary registries.conf content is accepted or refused with
// an error, never a panic, and never with the temporary file's path in the message; what is
// accepted is what podman loads for an inspection.
func FuzzValidateRegistriesConf(f *testing.F) {
	f.Add([]byte("[[registry]]\nlocation = \"docker.io\"\n\n[[registry.mirror]]\nlocation = \"mirror.example/docker\"\n"))
	f.Add([]byte("unqualified-search-registries = [\"docker.io\"]\n[[registry]]\nprefix = \"*.example\"\nblocked = true\n"))
	f.Add([]byte("[aliases]\n\"app\" = \"registry.example/team/app\"\n"))
	f.Add([]byte("[[registry]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := ValidateRegistriesConf(data); err != nil && strings.Contains(err.Error(), "archgate-registries-conf-") {
			t.Errorf("error names the temporary file: %v", err)
		}
	})
}

// FuzzParseCertificates: arbitrary CA bundle bytes give certificates or an error, never a
// panic, and never certificates together with an error.
func FuzzParseCertificates(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("not pem"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		certs, err := ParseCertificates(data)
		if (err == nil) == (len(certs) == 0) {
			t.Errorf("%d certificates with error %v", len(certs), err)
		}
	})
}

// Plain HTTP is allowed only to the hosts registries.conf marks insecure (as a registry's
// location, a mirror or a wildcard entry), or to every host with TLS verification off.
func TestOptionsAllowsPlainHTTP(t *testing.T) {
	const conf = `
[[registry]]
location = "reg.example:5000"
insecure = true

[[registry]]
prefix = "example.com/team"
location = "internal.example:5000/team"
insecure = true

[[registry]]
location = "docker.io"
[[registry.mirror]]
location = "mirror.example:5000/hub"
insecure = true
[[registry.mirror]]
location = "secure-mirror.example"

[[registry]]
prefix = "*.dev.example"
insecure = true

[[registry]]
location = "tls.example:5000"
`
	tests := map[string]struct {
		conf        string
		skipVerify  bool
		host        string
		wantAllowed bool
	}{
		"an insecure registry":                 {conf: conf, host: "reg.example:5000", wantAllowed: true},
		"its port matters":                     {conf: conf, host: "reg.example:5001"},
		"a remapped prefix's location":         {conf: conf, host: "internal.example:5000", wantAllowed: true},
		"the remapped prefix itself":           {conf: conf, host: "example.com"},
		"an insecure mirror":                   {conf: conf, host: "mirror.example:5000", wantAllowed: true},
		"a mirror not insecure":                {conf: conf, host: "secure-mirror.example"},
		"the registry of an insecure mirror":   {conf: conf, host: "docker.io"},
		"a host a wildcard entry matches":      {conf: conf, host: "a.dev.example", wantAllowed: true},
		"a registry not insecure":              {conf: conf, host: "tls.example:5000"},
		"a host registries.conf does not name": {conf: conf, host: "realm.evil.example"},
		"no registries.conf entries":           {host: "reg.example:5000"},
		"TLS verification off for every host":  {skipVerify: true, host: "realm.evil.example", wantAllowed: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := newPodmanConfig(t, tc.conf).options()
			opts.InsecureSkipTLSVerify = tc.skipVerify
			if got := opts.AllowsPlainHTTP(tc.host); got != tc.wantAllowed {
				t.Errorf("AllowsPlainHTTP(%q) = %v, want %v", tc.host, got, tc.wantAllowed)
			}
		})
	}
}

func TestRegistryAllowed(t *testing.T) {
	allowed := []string{"quay.io", "registry.example.com:5000", "*.corp.example", "docker.io"}
	tests := map[string]struct {
		allowed []string
		domain  string
		want    bool
	}{
		"no list allows every registry":       {domain: "evil.example", want: true},
		"an exact entry":                      {allowed: allowed, domain: "quay.io", want: true},
		"an exact entry with its port":        {allowed: allowed, domain: "registry.example.com:5000", want: true},
		"another port of an exact entry":      {allowed: allowed, domain: "registry.example.com:5001"},
		"an exact entry's host without port":  {allowed: allowed, domain: "registry.example.com"},
		"a host under a wildcard":             {allowed: allowed, domain: "eu.mirror.corp.example", want: true},
		"a host under a wildcard, any port":   {allowed: allowed, domain: "reg.corp.example:5000", want: true},
		"the wildcard's domain itself":        {allowed: allowed, domain: "corp.example"},
		"a name that only ends alike":         {allowed: allowed, domain: "evilcorp.example"},
		"a subdomain of an exact entry":       {allowed: allowed, domain: "evil.quay.io"},
		"another registry":                    {allowed: allowed, domain: "ghcr.io"},
		"host names in any case":              {allowed: allowed, domain: "Quay.IO", want: true},
		"docker.io, as short names normalize": {allowed: allowed, domain: "docker.io", want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := RegistryAllowed(tc.allowed, tc.domain); got != tc.want {
				t.Errorf("RegistryAllowed(%q) = %v, want %v", tc.domain, got, tc.want)
			}
		})
	}
}

// An image of a registry outside the allowlist fails at once with reason blocked, without a
// request; the short name nginx counts as docker.io.
func TestRegistryInspectorAllowedRegistries(t *testing.T) {
	host, accepted := hangingHost(t)
	opts := Options{AllowedRegistries: []string{"docker.io"}, Timeout: time.Minute}
	for _, img := range []string{host + "/app:1", "quay.io/app:1"} {
		_, err := mustInspector(t, opts).Architectures(t.Context(), img, nil)
		if r := ReasonOf(err); r != ReasonBlocked || !strings.Contains(err.Error(), "allowedRegistries") {
			t.Errorf("%s: %v (reason %q), want %q naming allowedRegistries", img, err, r, ReasonBlocked)
		}
	}
	if n := accepted(); n != 0 {
		t.Errorf("the registry outside the allowlist was connected to %d times", n)
	}
	short, stop := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer stop()
	if _, err := mustInspector(t, opts).Architectures(short, "nginx", nil); ReasonOf(err) == ReasonBlocked {
		t.Errorf("nginx (docker.io) refused: %v", err)
	}
}
