package credentials

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Identity names the credential material an image was read with, without revealing it.
// Cache keys include it so that a result read with one credential is only served to pods
// that hold that same credential.
type Identity string

// Anonymous is the identity of a request that sends no credentials.
const Anonymous Identity = "anonymous"

// identityLen is the number of hex characters kept from the SHA-256 sum: 128 bits, so that
// a collision (which would let one credential's cache entry serve another) is out of reach.
const identityLen = 32

// identityDomain separates these hashes from any other use of SHA-256 over the same fields.
const identityDomain = "archgate.credential.v1"

// Identity returns the stable identity of the credential material: the truncated SHA-256 of
// its fields. Equal material gives equal identities in every process; changing any field
// (a rotated password in the global pull secret, say) changes it. The hash is one-way, but
// a weak password could still be guessed from it offline: do not publish identities.
func (a AuthConfig) Identity() Identity {
	h := sha256.New()
	write := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write(identityDomain)
	write(a.Username)
	write(a.Password)
	write(a.IdentityToken)
	write(a.RegistryToken)
	return Identity(hex.EncodeToString(h.Sum(nil))[:identityLen])
}
