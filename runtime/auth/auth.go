package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// Scope names what a token may do; each route declares the one it needs.
type Scope string

const (
	// Public routes need no token (probes only).
	Public           Scope = ""
	SimulationRead   Scope = "simulation:read"
	SimulationRun    Scope = "simulation:run"
	EvaluateRunRead  Scope = "evaluate:run:read"
	EvaluateRunWrite Scope = "evaluate:run:write"
	InventoryAdmin   Scope = "inventory:admin"
)

// Scopes lists every scope a token can carry.
var Scopes = []Scope{SimulationRead, SimulationRun, EvaluateRunRead, EvaluateRunWrite, InventoryAdmin}

// ParseScopes reads a comma-separated scope list such as "simulation:read,simulation:run".
func ParseScopes(csv string) ([]Scope, error) {
	var out []Scope
	for _, part := range strings.Split(csv, ",") {
		s := Scope(strings.TrimSpace(part))
		if s == "" {
			continue
		}
		if !slices.Contains(Scopes, s) {
			return nil, fmt.Errorf("unknown scope %q (scopes: %s)", s, JoinScopes(Scopes))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("at least one scope is required (scopes: %s)", JoinScopes(Scopes))
	}
	return out, nil
}

// JoinScopes writes scopes comma-separated.
func JoinScopes(scopes []Scope) string {
	parts := make([]string, len(scopes))
	for i, s := range scopes {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}

// Token describes a stored token; its secret is never kept, so it is never shown.
type Token struct {
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	Scopes    []Scope   `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
}

// Allows says whether the token carries scope.
func (t Token) Allows(scope Scope) bool { return scope == Public || slices.Contains(t.Scopes, scope) }

// ErrInvalid is returned for a token that is malformed, unknown, revoked or does not match.
var ErrInvalid = errors.New("auth: the token is not valid")

// Kind is the state-store record family of tokens.
const Kind = "api-token"

// tokenPrefix starts every token, so a leaked one is recognisable (and redactable) as Lensfn's.
const tokenPrefix = "lens_"

// BootstrapID names the bootstrap token in Verify's answer.
const BootstrapID = "bootstrap"

// Tokens creates, lists, revokes and verifies tokens kept in a state store.
type Tokens struct {
	Store state.Store
	// BootstrapSHA256, when set, is the hex SHA-256 of a token that carries every scope
	// (LENS_BOOTSTRAP_TOKEN_SHA256, from a Secret), so a cluster has an admin before any
	// token was created.
	BootstrapSHA256 string
}

type storedToken struct {
	Token
	SHA256 string `json:"sha256"`
}

// HashToken is the hex SHA-256 of a token: what is stored, and what LENS_BOOTSTRAP_TOKEN_SHA256
// holds (`printf %s "$TOKEN" | sha256sum`). Tokens are 256-bit random, so a fast hash suffices.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// newSecret returns a fresh token for id: lens_<id>_<64 hex characters>.
func newSecret(id string) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return tokenPrefix + id + "_" + hex.EncodeToString(b[:])
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Create stores a new token with the scopes and returns it with its one-time secret.
func (ts *Tokens) Create(ctx context.Context, name string, scopes []Scope) (string, Token, error) {
	if len(scopes) == 0 {
		return "", Token{}, errors.New("auth: a token needs at least one scope")
	}
	for _, s := range scopes {
		if !slices.Contains(Scopes, s) {
			return "", Token{}, fmt.Errorf("auth: unknown scope %q", s)
		}
	}
	t := Token{ID: newID(), Name: name, Scopes: scopes, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	secret := newSecret(t.ID)
	doc, err := json.Marshal(storedToken{Token: t, SHA256: HashToken(secret)})
	if err != nil {
		return "", Token{}, err
	}
	if _, err := ts.Store.Create(ctx, state.Record{Kind: Kind, ID: t.ID, Status: "active", CreatedAt: t.CreatedAt,
		Search: name, Doc: doc}); err != nil {
		return "", Token{}, err
	}
	return secret, t, nil
}

// Revoke deletes a token by id; state.ErrNotFound when there is none.
func (ts *Tokens) Revoke(ctx context.Context, id string) error {
	return ts.Store.Delete(ctx, Kind, id, state.DeleteOptions{})
}

// List returns every stored token, newest first, without secrets.
func (ts *Tokens) List(ctx context.Context) ([]Token, error) {
	var out []Token
	for offset := 0; ; {
		page, err := ts.Store.List(ctx, state.Query{Kind: Kind, Offset: offset, Limit: state.MaxLimit})
		if err != nil {
			return nil, err
		}
		for _, rec := range page.Records {
			var st storedToken
			if err := json.Unmarshal(rec.Doc, &st); err != nil {
				return nil, fmt.Errorf("auth: token %s: %w", rec.ID, err)
			}
			out = append(out, st.Token)
		}
		offset += len(page.Records)
		if len(page.Records) == 0 || offset >= page.Total {
			return out, nil
		}
	}
}

// Verify returns the token a bearer secret belongs to; ErrInvalid when it belongs to none.
// Store failures are returned as they are, so the caller can answer 503 rather than 401.
func (ts *Tokens) Verify(ctx context.Context, secret string) (Token, error) {
	hash := HashToken(secret)
	if ts.BootstrapSHA256 != "" && subtle.ConstantTimeCompare([]byte(hash), []byte(strings.ToLower(ts.BootstrapSHA256))) == 1 {
		return Token{ID: BootstrapID, Name: "bootstrap", Scopes: Scopes}, nil
	}
	id, ok := idOf(secret)
	if !ok {
		return Token{}, ErrInvalid
	}
	rec, err := ts.Store.Get(ctx, Kind, id)
	if errors.Is(err, state.ErrNotFound) {
		return Token{}, ErrInvalid
	}
	if err != nil {
		return Token{}, err
	}
	var st storedToken
	if err := json.Unmarshal(rec.Doc, &st); err != nil {
		return Token{}, ErrInvalid
	}
	if subtle.ConstantTimeCompare([]byte(hash), []byte(st.SHA256)) != 1 {
		return Token{}, ErrInvalid
	}
	return st.Token, nil
}

// idOf reads the public id out of lens_<id>_<secret>.
func idOf(secret string) (string, bool) {
	rest, ok := strings.CutPrefix(secret, tokenPrefix)
	if !ok {
		return "", false
	}
	id, tail, ok := strings.Cut(rest, "_")
	if !ok || len(id) != 12 || len(tail) != 64 {
		return "", false
	}
	for _, c := range id + tail {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	return id, true
}

// ValidBootstrapHash checks a LENS_BOOTSTRAP_TOKEN_SHA256 value: 64 hex characters.
func ValidBootstrapHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}
