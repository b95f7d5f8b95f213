package inferencesim

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
)

// TestAdminConfigValidatesAsTheFlags: every value is accepted by
// /admin/config exactly when the same value is accepted on the command
// line, and a refused update changes nothing.
func TestAdminConfigValidatesAsTheFlags(t *testing.T) {
	ts := startSim(t)
	before := func() string { _, b := get(t, ts.url()+"/admin/config"); return b }()
	for _, tc := range []struct {
		key, flagValue, jsonValue string
		ok                        bool
	}{
		{"time-to-first-token", "1000000h", `"1000000h"`, false},
		{"time-to-first-token", "1e300", `1e300`, false},
		{"time-to-first-token", "NaN", `"NaN"`, false},
		{"time-to-first-token", "-5", `-5`, false},
		{"time-to-first-token", "10m", `"10m"`, true},
		{"inter-token-latency", "11s", `"11s"`, false},
		{"inter-token-latency", "2", `2`, true},
		{"time-factor-under-load", "1e308", `1e308`, false},
		{"time-factor-under-load", "0", `0`, false},
		{"time-factor-under-load", "-5", `-5`, false},
		{"time-factor-under-load", "0.5", `0.5`, false},
		{"time-factor-under-load", "101", `101`, false},
		{"time-factor-under-load", "2.5", `2.5`, true},
		{"failure-injection-rate", "101", `101`, false},
		{"failure-injection-rate", "5.5", `5.5`, false},
		{"failure-injection-rate", "20", `20`, true},
		{"failure-types", "nope", `["nope"]`, false},
		{"failure-types", "rate_limit", `["rate_limit"]`, true},
		{"latency-calculator", "bogus", `"bogus"`, false},
		{"latency-calculator", "per-token", `"per-token"`, true},
	} {
		_, flagErr := config.Parse([]string{"--model", "m", "--" + tc.key, tc.flagValue}, config.Environment{}, nil)
		if (flagErr == nil) != tc.ok {
			t.Errorf("--%s %s: flag error %v, want ok=%v", tc.key, tc.flagValue, flagErr, tc.ok)
		}
		s, _, body := post(t, ts.url()+"/admin/config", `{"`+tc.key+`":`+tc.jsonValue+`}`)
		if tc.ok {
			if s != 200 {
				t.Errorf("admin %s=%s: %d %s", tc.key, tc.jsonValue, s, body)
			}
			// back to the start for the next case
			if s, _, body := post(t, ts.url()+"/admin/config", before); s != 200 {
				t.Fatalf("restoring: %d %s", s, body)
			}
			continue
		}
		openAIError(t, s, body, 400, "")
		if _, now := get(t, ts.url()+"/admin/config"); now != before {
			t.Errorf("a refused update (%s=%s) changed the settings:\n%s\n%s", tc.key, tc.jsonValue, before, now)
		}
	}
	// One bad key refuses the whole update.
	s, _, body := post(t, ts.url()+"/admin/config", `{"failure-injection-rate":50,"time-factor-under-load":1e308}`)
	openAIError(t, s, body, 400, "")
	if _, now := get(t, ts.url()+"/admin/config"); now != before {
		t.Fatalf("partial update applied: %s", now)
	}
	for _, bad := range []string{`[]`, `null`, `"x"`, `{"model":"other"}`, `{"failure-types":[["a"]]}`, `{"time-to-first-token":null}`} {
		s, _, body := post(t, ts.url()+"/admin/config", bad)
		openAIError(t, s, body, 400, "")
	}
}

func TestAdminTokenAndAPIKey(t *testing.T) {
	ts := startSimEnv(t, config.Environment{AdminToken: "admin-secret-1", APIKey: "api-secret-2"})
	do := func(method, path, auth, body string) (int, string) {
		req, _ := http.NewRequest(method, ts.url()+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("401 without WWW-Authenticate: %v", resp.Header)
		}
		return resp.StatusCode, string(b)
	}
	chat := `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`
	for _, auth := range []string{"", "Bearer wrong", "Bearer admin-secret-1", "api-secret-2", "Bearer api-secret-2x"} {
		s, body := do("GET", "/v1/models", auth, "")
		openAIError(t, s, body, 401, "")
		s, body = do("POST", "/v1/chat/completions", auth, chat)
		openAIError(t, s, body, 401, "")
		if strings.Contains(body, "secret") {
			t.Fatalf("a 401 names a secret: %s", body)
		}
	}
	for _, auth := range []string{"", "Bearer wrong", "Bearer api-secret-2"} {
		s, body := do("GET", "/admin/config", auth, "")
		openAIError(t, s, body, 401, "")
		s, body = do("POST", "/admin/config", auth, `{"failure-injection-rate":100}`)
		openAIError(t, s, body, 401, "")
	}
	if s, body := do("POST", "/v1/chat/completions", "Bearer api-secret-2", chat); s != 200 {
		t.Fatalf("with the API key: %d %s", s, body)
	}
	s, body := do("GET", "/admin/config", "Bearer admin-secret-1", "")
	if s != 200 || strings.Contains(body, "secret") {
		t.Fatalf("admin GET with the token: %d %s", s, body)
	}
	// Probes and metrics stay open, as in vLLM (the key guards /v1 only).
	for _, path := range []string{"/health", "/metrics"} {
		if s, _ := do("GET", path, "", ""); s != 200 {
			t.Fatalf("%s: %d", path, s)
		}
	}
	// The flags win over the environment; bad tokens are refused.
	cfg, err := config.Parse([]string{"--model", "m", "--api-key", "flag-key"}, config.Environment{APIKey: "env-key"}, nil)
	if err != nil || cfg.APIKey != "flag-key" {
		t.Fatalf("flag over env: %v %v", cfg, err)
	}
	for _, bad := range []string{"has space", "tab\there", strings.Repeat("k", limits.MaxTokenLen+1)} {
		if _, err := config.Parse([]string{"--model", "m", "--admin-token", bad}, config.Environment{}, nil); err == nil {
			t.Fatalf("admin token %q accepted", bad)
		}
	}
	if strings.Contains(config.Usage(), "secret") {
		t.Fatal("usage shows a secret")
	}
}

// TestHostFlag: --host is the listen address. 127.0.0.2 is loopback too,
// so binding it and finding 127.0.0.1 refused shows the flag is honoured.
func TestHostFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("127.0.0.2 is not available: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg, err := config.Parse([]string{"--model", "m", "--host", "127.0.0.2", "--port", strconv.Itoa(port)}, config.Environment{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(cfg, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	addr := "127.0.0.2:" + strconv.Itoa(port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listening on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		c.Close()
		t.Fatal("--host 127.0.0.2 also listens on 127.0.0.1")
	}
	if c, err := config.Parse([]string{"--model", "m"}, config.Environment{ListenHost: "127.0.0.1"}, nil); err != nil || c.Host != "127.0.0.1" {
		t.Fatalf("LENS_LISTEN_HOST is the default of --host: %v %v", c, err)
	}
	if c, _ := config.Parse([]string{"--model", "m", "--host", "::1"}, config.Environment{ListenHost: "127.0.0.1"}, nil); c == nil || c.Host != "::1" {
		t.Fatal("--host wins over LENS_LISTEN_HOST")
	}
	for _, bad := range []string{"not a host", "a..b", "-", "::1:"} {
		if _, err := config.Parse([]string{"--model", "m", "--host", bad}, config.Environment{}, nil); err == nil {
			t.Fatalf("--host %q accepted", bad)
		}
	}
	for _, good := range []string{"127.0.0.1", "::1", "localhost", "0.0.0.0"} {
		if _, err := config.Parse([]string{"--model", "m", "--host", good}, config.Environment{}, nil); err != nil {
			t.Fatalf("--host %q: %v", good, err)
		}
	}
}
