package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
)

// KeySize is the length of a sealing key.
const KeySize = 32

// ErrOpen is returned when a sealed value was tampered with, sealed for another record, or sealed
// with another key.
var ErrOpen = errors.New("secret: cannot open the sealed value")

// Sealer seals and opens secrets with one key.
type Sealer struct{ aead cipher.AEAD }

// ParseKey decodes a base64 key of KeySize bytes.
func ParseKey(encoded string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("secret: the key must be %d bytes, base64-encoded (openssl rand -base64 32)", KeySize)
	}
	return key, nil
}

// NewKey returns a fresh random key, base64-encoded.
func NewKey() string {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key)
	return base64.StdEncoding.EncodeToString(key)
}

// New returns a Sealer for a KeySize-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret: key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext for the record named by context (e.g. "simulation-task:1a2b3c4d").
func (s *Sealer) Seal(plaintext, context string) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := s.aead.Seal(nonce, nonce, []byte(plaintext), []byte(context))
	return base64.StdEncoding.EncodeToString(sealed)
}

// Open decrypts a value sealed for the same context.
func (s *Sealer) Open(sealed, context string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return "", ErrOpen
	}
	plain, err := s.aead.Open(nil, raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], []byte(context))
	if err != nil {
		return "", ErrOpen
	}
	return string(plain), nil
}

// FromEnv builds a Sealer from LENS_SECRET_KEY's value; empty gives nil (no secrets can be
// stored), a malformed key is an error.
func FromEnv(encoded string) (*Sealer, error) {
	if encoded == "" {
		return nil, nil
	}
	key, err := ParseKey(encoded)
	if err != nil {
		return nil, fmt.Errorf("LENS_SECRET_KEY: %w", err)
	}
	return New(key)
}
