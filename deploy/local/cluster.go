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
	var cluster struct {
		SessionID string `json:"sessionId"`
	}
	body, _ := json.Marshal(map[string]string{"name": LocalClusterName, "kind": "local"})
	code, raw, err := call(ctx, http.MethodPost, base+"/api/cluster/clusters", body)
	switch {
	case err != nil:
		return "", err
	case code == http.StatusCreated:
		err = json.Unmarshal(raw, &cluster)
	case code == http.StatusConflict: // registered by an earlier start of this stack
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		code, raw, err = call(ctx, http.MethodGet, base+"/api/cluster/clusters?name="+url.QueryEscape(LocalClusterName), nil)
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

func call(ctx context.Context, method, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
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
