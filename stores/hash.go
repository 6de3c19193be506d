package stores

import "crypto/sha256"

// PayloadHash returns the SHA-256 digest (32 bytes) of payload: the hash
// stored with inbox and outbox rows to tell a true duplicate from a reused
// id or key carrying another payload.
func PayloadHash(payload []byte) []byte {
	h := sha256.Sum256(payload)
	return h[:]
}
