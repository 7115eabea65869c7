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

package certs

import (
	"crypto/x509"
	"slices"
	"time"
)

// RenewAt returns when a certificate is due for renewal: once two thirds of its lifetime have
// passed, so that a third of it is left to retry and to propagate the new one.
func RenewAt(c *x509.Certificate) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(life / 3 * 2)
}

// trustedCAs returns the CAs of bundle still valid at now, with current first and no duplicates.
func trustedCAs(current *x509.Certificate, bundle []*x509.Certificate, now time.Time) []*x509.Certificate {
	var out []*x509.Certificate
	if current != nil {
		out = append(out, current)
	}
	for _, c := range bundle {
		if !c.IsCA || !now.Before(c.NotAfter) {
			continue
		}
		if slices.ContainsFunc(out, func(o *x509.Certificate) bool { return o.Equal(c) }) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// caNeedsRotation reports whether a new CA must be generated: there is none usable, or the
// current one is due for renewal.
func caNeedsRotation(current *KeyPair, now time.Time) bool {
	return current == nil || !current.Cert.IsCA || !now.Before(RenewAt(current.Cert))
}

// Reasons a serving certificate is (re)issued, for logs and events.
const (
	reasonMissing    = "missing or unreadable"
	reasonDNSNames   = "DNS names changed"
	reasonRenewal    = "due for renewal"
	reasonUntrusted  = "not signed by a trusted CA"
	reasonOutlivesCA = "outlives its CA"
)

// servingReissueReason returns why the serving certificate must be (re)issued, or "" when it
// can stay: it exists, covers dnsNames, is not due for renewal, and verifies against trusted.
func servingReissueReason(leaf *KeyPair, trusted []*x509.Certificate, dnsNames []string, now time.Time) string {
	if leaf == nil {
		return reasonMissing
	}
	if !sameStrings(leaf.Cert.DNSNames, dnsNames) {
		return reasonDNSNames
	}
	if !now.Before(RenewAt(leaf.Cert)) {
		return reasonRenewal
	}
	pool := x509.NewCertPool()
	for _, c := range trusted {
		pool.AddCert(c)
	}
	chains, err := leaf.Cert.Verify(x509.VerifyOptions{
		Roots:       pool,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil || len(chains) == 0 {
		return reasonUntrusted
	}
	if chains[0][len(chains[0])-1].NotAfter.Before(leaf.Cert.NotAfter) {
		return reasonOutlivesCA
	}
	return ""
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
