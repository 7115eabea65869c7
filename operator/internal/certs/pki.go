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

// Package certs issues and rotates the serving certificates of archgate's admission webhooks
// and metrics endpoints when no external issuer is used: a self-signed CA kept in a Secret signs
// one serving certificate per Service, and the CA bundle (current and previous CAs) is what the
// webhook configurations and scrapers trust. It also names the alternatives (cert-manager,
// OpenShift service-ca) and the annotations that hand the work to them.
//
// It is hand-written rather than github.com/open-policy-agent/cert-controller because that
// library gives each Secret its own CA and keeps the CA's private key in the Secret the serving
// pods mount, injects only the newest CA (a server still presenting a leaf of the old one fails
// until it reloads), creates no Secret, and issues RSA keys with fixed serial numbers. The
// section Certificates of docs/architecture.md compares the two, with line references.
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// KeyPair is a certificate with its private key, in PEM and parsed forms.
type KeyPair struct {
	// CertPEM is the PEM-encoded certificate.
	CertPEM []byte
	// KeyPEM is the PEM-encoded (PKCS #8) private key.
	KeyPEM []byte
	// Cert is CertPEM parsed.
	Cert *x509.Certificate
	// Key is KeyPEM parsed.
	Key crypto.Signer
}

// clockSkew backdates NotBefore so that a peer whose clock runs slightly behind accepts a
// certificate issued a moment ago.
const clockSkew = 5 * time.Minute

// NewCA returns a self-signed CA certificate valid from now for validity.
func NewCA(commonName string, now time.Time, validity time.Duration) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return KeyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"archgate"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, tmpl, key, key)
}

// NewServingCert returns a TLS server certificate for hosts (DNS names or IP addresses) signed by
// ca. It never outlives ca: NotAfter is the earlier of now+validity and the CA's NotAfter.
func NewServingCert(ca KeyPair, hosts []string, now time.Time, validity time.Duration) (KeyPair, error) {
	if len(hosts) == 0 {
		return KeyPair{}, errors.New("serving certificate needs at least one DNS name or IP address")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generating serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return KeyPair{}, err
	}
	notAfter := now.Add(validity)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0], Organization: []string{"archgate"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return sign(tmpl, ca.Cert, key, ca.Key)
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return serial, nil
}

func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, parentKey crypto.Signer) (KeyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return KeyPair{}, fmt.Errorf("signing certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return KeyPair{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		Cert:    cert,
		Key:     key,
	}, nil
}

// ParseKeyPair parses a PEM certificate (the first one, when certPEM holds a chain) and its
// private key, and checks that they belong together.
func ParseKeyPair(certPEM, keyPEM []byte) (KeyPair, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return KeyPair{}, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return KeyPair{}, errors.New("no PEM private key found")
	}
	var key crypto.Signer
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return KeyPair{}, fmt.Errorf("parsing private key: %w", err)
		}
		signer, ok := k.(crypto.Signer)
		if !ok {
			return KeyPair{}, fmt.Errorf("private key of type %T cannot sign", k)
		}
		key = signer
	case "EC PRIVATE KEY":
		if key, err = x509.ParseECPrivateKey(block.Bytes); err != nil {
			return KeyPair{}, fmt.Errorf("parsing private key: %w", err)
		}
	case "RSA PRIVATE KEY":
		if key, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
			return KeyPair{}, fmt.Errorf("parsing private key: %w", err)
		}
	default:
		return KeyPair{}, fmt.Errorf("unsupported private key PEM type %q", block.Type)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return KeyPair{}, err
	}
	if !bytes.Equal(pub, certs[0].RawSubjectPublicKeyInfo) {
		return KeyPair{}, errors.New("private key does not match the certificate")
	}
	return KeyPair{CertPEM: certPEM, KeyPEM: keyPEM, Cert: certs[0], Key: key}, nil
}

// ParseCertificates parses every CERTIFICATE block of a PEM bundle; it fails when there is none.
func ParseCertificates(bundle []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// EncodeCertificates returns certs as one PEM bundle.
func EncodeCertificates(certs []*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return buf.Bytes()
}
