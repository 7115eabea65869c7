package components

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/archgate/archgate/operator/internal/certs"
)

// WriteSelfSignedServingCert writes a serving certificate for hosts (DNS names or IP
// addresses), signed by a new CA valid for validity, as TLSCertName and TLSKeyName into dir,
// and returns the CA certificate in PEM for a webhook configuration's caBundle. It is for
// running a webhook role outside a cluster (the simulator, tests); in a cluster the operator
// issues and rotates the certificates itself.
func WriteSelfSignedServingCert(dir string, validity time.Duration, hosts ...string) ([]byte, error) {
	now := time.Now()
	ca, err := certs.NewCA("archgate webhook CA", now, validity)
	if err != nil {
		return nil, err
	}
	leaf, err := certs.NewServingCert(ca, hosts, now, validity)
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{TLSCertName: leaf.CertPEM, TLSKeyName: leaf.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("writing the webhook serving certificate: %w", err)
		}
	}
	return ca.CertPEM, nil
}
