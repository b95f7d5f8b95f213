package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// LocalClusterName is the cluster the stack registers for itself in inventory-api, so runs and
// deployment executions have a cluster session to name without any setup.
const LocalClusterName = "local"

// registerLocalCluster registers the `local` cluster (or finds it, after a restart that kept the
// store) and returns its active session id; "" when inventory-api is not part of the stack.
func (s *Stack) registerLocalCluster(ctx context.Context) (string, error) {
	base, ok := s.FunctionURL("inventory-api")
	if !ok {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	token, revoke, err := s.registrationToken(ctx)
	if err != nil {
		return "", fmt.Errorf("register the local cluster in inventory-api: %w", err)
	}
	defer revoke()
	do := func(method, target string, body []byte) (int, []byte, error) {
		return call(ctx, method, target, token, body)
	}
	var cluster struct {
		SessionID string `json:"sessionId"`
	}
	body, _ := json.Marshal(map[string]string{"name": LocalClusterName, "kind": "local"})
	code, raw, err := do(http.MethodPost, base+"/api/cluster/clusters", body)
	switch {
	case err != nil:
		return "", err
	case code == http.StatusCreated:
		err = json.Unmarshal(raw, &cluster)
	case code == http.StatusConflict: // registered by an earlier start of this stack
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		code, raw, err = do(http.MethodGet, base+"/api/cluster/clusters?name="+url.QueryEscape(LocalClusterName), nil)
		if err == nil && code == http.StatusOK {
			if err = json.Unmarshal(raw, &list); err == nil && len(list.Items) == 1 {
				err = json.Unmarshal(list.Items[0], &cluster)
			}
		}
	}
	if err == nil && cluster.SessionID == "" {
		err = fmt.Errorf("HTTP %d: %s", code, raw)
	}
	if err != nil {
		return "", fmt.Errorf("register the local cluster in inventory-api: %w", err)
	}
	return cluster.SessionID, nil
}

// registrationToken is a token of the inventory:admin scope for the registration alone, minted
// in the stack's store when the functions need tokens ("" with LENS_AUTH=off) and revoked after.
func (s *Stack) registrationToken(ctx context.Context) (string, func(), error) {
	if s.opts.Auth != "required" {
		return "", func() {}, nil
	}
	store, err := redisstore.Open(ctx, s.RedisURL, redisstore.Options{})
	if err != nil {
		return "", nil, err
	}
	tokens := &auth.Tokens{Store: store}
	secret, token, err := tokens.Create(ctx, "lensfn-local: register the local cluster", []auth.Scope{auth.InventoryAdmin})
	if err != nil {
		store.Close()
		return "", nil, err
	}
	return secret, func() {
		_ = tokens.Revoke(context.WithoutCancel(ctx), token.ID)
		store.Close()
	}, nil
}

func call(ctx context.Context, method, url, token string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, raw, err
}
