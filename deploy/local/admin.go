package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// StackFile is what a running stack records in its data dir (private, 0600) so admin commands
// such as `lensfn-local token create` reach its Redis while it runs.
type StackFile struct {
	RedisURL    string `json:"redis_url"` // with the password
	StorePrefix string `json:"store_prefix,omitempty"`
	PID         int    `json:"pid"`
}

const stackFileName = "stack.json"

func writeStackFile(dataDir string, f StackFile) error {
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dataDir, stackFileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadStackFile reads the record of the stack running on dataDir.
func ReadStackFile(dataDir string) (StackFile, error) {
	var f StackFile
	raw, err := os.ReadFile(filepath.Join(dataDir, stackFileName))
	if errors.Is(err, os.ErrNotExist) {
		return f, fmt.Errorf("no stack has run on %s (start it with make run, or pass --redis-url)", dataDir)
	}
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("%s: %w", filepath.Join(dataDir, stackFileName), err)
	}
	return f, nil
}

// OpenTokens opens the token store of a Redis (a stack's, or a cluster's through a port
// forward). close releases it.
func OpenTokens(ctx context.Context, redisURL, prefix string) (tokens *auth.Tokens, close func() error, err error) {
	store, err := redisstore.Open(ctx, redisURL, redisstore.Options{Prefix: prefix})
	if err != nil {
		return nil, nil, err
	}
	return &auth.Tokens{Store: store}, store.Close, nil
}
