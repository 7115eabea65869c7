package inspect

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"
)

// ValidateRegistriesConf checks content as a registries.conf (containers-registries.conf(5),
// version 2) with podman's own loader, the one inspections use, so that a file the operator
// accepts is a file the controller can load. The error says what podman refused.
func ValidateRegistriesConf(content []byte) error {
	return ValidateRegistriesConfWithDropIn(content, "", nil)
}

// ValidateRegistriesConfWithDropIn is ValidateRegistriesConf for content together with the
// drop-in dropInName (in registries.conf.d, "" for none), as the controller loads them: the
// drop-in's entries replace content's for the same prefix.
func ValidateRegistriesConfWithDropIn(content []byte, dropInName string, dropIn []byte) error {
	dir, err := os.MkdirTemp("", "archgate-registries-conf-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	conf := filepath.Join(dir, "registries.conf")
	dropIns := filepath.Join(dir, "registries.conf.d")
	if err := os.Mkdir(dropIns, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(conf, content, 0o600); err != nil {
		return err
	}
	if dropInName != "" {
		if err := os.WriteFile(filepath.Join(dropIns, dropInName), dropIn, 0o600); err != nil {
			return err
		}
	}
	// Podman caches parsed files per path for the process; this path is gone after the call.
	defer sysregistriesv2.InvalidateCache()
	_, err = sysregistriesv2.FindRegistry(&types.SystemContext{
		SystemRegistriesConfPath: conf, SystemRegistriesConfDirPath: dropIns,
	}, "registry.invalid/validation")
	if err != nil {
		return fmt.Errorf("invalid registries.conf: %w", unwrapPath(err, dir))
	}
	return nil
}

// unwrapPath removes the temporary directory from podman's messages, which name the file.
func unwrapPath(err error, dir string) error {
	return errors.New(string(bytes.ReplaceAll([]byte(err.Error()), []byte(dir+string(filepath.Separator)), nil)))
}

// ParseCertificates returns the certificates of a PEM bundle, refusing anything else: text
// outside PEM blocks, blocks that are not CERTIFICATE, certificates x509 cannot parse, and a
// bundle without any certificate. Errors number the block, so a user can find it.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := data
	for i := 1; ; i++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is a %q, want CERTIFICATE", i, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", i, err)
		}
		certs = append(certs, cert)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		if len(certs) == 0 {
			return nil, errors.New("not PEM: no -----BEGIN CERTIFICATE----- block found")
		}
		return nil, fmt.Errorf("text that is not PEM after certificate %d", len(certs))
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate: the bundle is empty")
	}
	return certs, nil
}

// AllowsPlainHTTP reports whether a registry request may go to host (host[:port]) in plain
// HTTP: when TLS verification is off for every registry (InsecureSkipTLSVerify), or when
// registries.conf marks that host insecure, as a registry or as a mirror. containers/image only
// falls back to plain HTTP for such hosts; any other plain-HTTP request is an auth realm or a
// redirect a registry named, which the controller's egress proxy refuses with this answer.
// A registries.conf that cannot be read allows none.
func (o Options) AllowsPlainHTTP(host string) bool {
	if o.InsecureSkipTLSVerify {
		return true
	}
	sys := o.registriesConfContext()
	regs, err := sysregistriesv2.GetRegistries(sys)
	if err != nil {
		return false
	}
	for _, reg := range regs {
		if reg.Insecure && locationHost(reg.Location) == host {
			return true
		}
		for _, m := range reg.Mirrors {
			if m.Insecure && locationHost(m.Location) == host {
				return true
			}
		}
	}
	// A wildcard entry (prefix *.example.com) has no location of its own: its hosts are the
	// ones it matches.
	reg, err := sysregistriesv2.FindRegistry(sys, host)
	return err == nil && reg != nil && reg.Insecure && strings.HasPrefix(reg.Prefix, "*.")
}

// registriesConfContext is the system context that names only the registries.conf files, for
// podman's reading of them (FindRegistry, GetRegistries).
func (o Options) registriesConfContext() *types.SystemContext {
	return &types.SystemContext{SystemRegistriesConfPath: o.RegistriesConfPath, SystemRegistriesConfDirPath: o.RegistriesConfDirPath}
}

// hostOf is the host of a registry's host[:port] (a reference's domain).
func hostOf(domain string) string {
	if h, _, err := net.SplitHostPort(domain); err == nil {
		return h
	}
	return domain
}

// locationHost is the host[:port] of a registries.conf location ("host:5000/namespace").
func locationHost(location string) string {
	host, _, _ := strings.Cut(location, "/")
	return host
}

// RegistryAllowed reports whether domain, the registry part of a normalized image reference
// (docker.io, quay.io, registry.example.com:5000), is one of allowed: an entry equal to it, or
// "*.example.com" for a host under example.com with any port. An empty list allows every
// registry.
func RegistryAllowed(allowed []string, domain string) bool {
	if len(allowed) == 0 {
		return true
	}
	domain = strings.ToLower(domain) // host names are case-insensitive; entries are lower case
	host := hostOf(domain)
	for _, a := range allowed {
		if suffix, wildcard := strings.CutPrefix(a, "*"); wildcard {
			if strings.HasSuffix(host, suffix) {
				return true
			}
		} else if a == domain {
			return true
		}
	}
	return false
}
