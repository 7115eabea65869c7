package fakeregistry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// DefaultTLSHostname is the DNS name the serving certificate covers besides localhost and the loopback IPs.
const DefaultTLSHostname = "fakeregistry.test"

// certLifetime is how long generated certificates stay valid.
const certLifetime = 365 * 24 * time.Hour

// tlsMaterial is a CA generated at start and a serving certificate it signed.
type tlsMaterial struct {
	caPEM  []byte
	pool   *x509.CertPool
	server tls.Certificate
}

// newTLSMaterial generates an ECDSA P-256 CA and a serving certificate for 127.0.0.1, ::1, localhost and
// hostname.
// Not shared with operator/internal/certs: fakeregistry imports nothing of archgate (the operator's tests import it).
func newTLSMaterial(hostname string) (*tlsMaterial, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "fakeregistry CA", Organization: []string{"archgate"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: hostname, Organization: []string{"archgate"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	// An IP address as the hostname (a registry on a node IP, reached without DNS) must be an IP
	// SAN: TLS clients do not match IPs against DNS names.
	if ip := net.ParseIP(hostname); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else {
		tmpl.DNSNames = append(tmpl.DNSNames, hostname)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating server certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &tlsMaterial{
		caPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pool:   pool,
		server: tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key, Leaf: nil},
	}, nil
}

// randomSerial returns a random 128-bit certificate serial number.
func randomSerial() *big.Int {
	// rand.Int only fails when the system randomness source fails, which crypto/rand treats as fatal.
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return n
}

// writeCertsDirs writes caPEM as ca.crt into root/<host:port> for every host name, docker/podman certs.d
// style, and returns the first directory.
func writeCertsDirs(root string, caPEM []byte, hostPorts []string) (string, error) {
	first := ""
	for _, hp := range hostPorts {
		dir := filepath.Join(root, hp)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("creating certs dir: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ca.crt"), caPEM, 0o644); err != nil {
			return "", fmt.Errorf("writing CA certificate: %w", err)
		}
		if first == "" {
			first = dir
		}
	}
	return first, nil
}
