// Package secret seals secrets (endpoint API keys) before they are stored, so they are never kept
// in plain text: AES-256-GCM with a key from LENS_SECRET_KEY (32 bytes, base64), bound to the
// record they belong to so a sealed value cannot be replayed onto another record. It imports only
// the standard library.
package secret
