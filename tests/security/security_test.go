package security_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
	"github.com/lensfn/lensfn/tests/stacktest"
)

type response struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, method, url, body string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(raw)}
}

func (r response) want(t *testing.T, status int, contains string) {
	t.Helper()
	if r.status != status || !strings.Contains(r.body, contains) {
		t.Fatalf("got %d %s, want %d containing %q", r.status, r.body, status, contains)
	}
	if status >= 400 && r.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d answered as %q", status, r.header.Get("Content-Type"))
	}
}

// lensfnLocal runs the admin command against the stack's data dir.
func lensfnLocal(t *testing.T, stack *local.Stack, args ...string) (string, string, error) {
	t.Helper()
	bin := filepath.Join(stacktest.Build(t, "deploy/local/cmd/lensfn-local"), "lensfn-local")
	cmd := exec.Command(bin, append([]string{"token"}, append(args, "--data-dir", stack.DataDir())...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return strings.TrimSpace(stdout.String()), stderr.String(), err
}

// TestTokensOverTheLocalStack: with LENS_AUTH=required every API route needs a bearer token
// (401 with a challenge), scopes are enforced (403), and the admin command creates, lists and
// revokes tokens while the stack runs, showing a secret only once.
func TestTokensOverTheLocalStack(t *testing.T) {
	stack := stacktest.Start(t, stacktest.Options{Only: []string{"simulation-api", "result-analyzer"}, Auth: "required"})
	api := stack.APIURL + "/api/simulation"

	r := send(t, "GET", api+"/backends", "", nil)
	r.want(t, 401, "Authorization: Bearer")
	if r.header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
	reader, _, err := lensfnLocal(t, stack, "create", "--scopes", "simulation:read", "--name", "ci")
	if err != nil || !strings.HasPrefix(reader, "lens_") || strings.Contains(reader, "\n") {
		t.Fatalf("token create printed %q (%v)", reader, err)
	}
	bearer := map[string]string{"Authorization": "Bearer " + reader}
	send(t, "GET", api+"/backends", "", bearer).want(t, 200, "trace-replayer")
	send(t, "POST", api+"/tasks", `{}`, bearer).want(t, 403, "simulation:run")
	send(t, "GET", api+"/backends", "", map[string]string{"Authorization": "Bearer " + reader + "x"}).want(t, 401, "not valid")

	list, _, err := lensfnLocal(t, stack, "list")
	if err != nil || !strings.Contains(list, "simulation:read") || strings.Contains(list, reader[len(reader)-20:]) {
		t.Fatalf("token list: %q %v", list, err)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	if _, stderr, err := lensfnLocal(t, stack, "revoke", id); err != nil {
		t.Fatalf("revoke: %v %s", err, stderr)
	}
	send(t, "GET", api+"/backends", "", bearer).want(t, 401, "not valid")
	if _, _, err := lensfnLocal(t, stack, "create", "--scopes", "simulation:everything"); err == nil {
		t.Fatal("an unknown scope was accepted")
	}

	t.Run("the stored token is a hash", func(t *testing.T) {
		store := openStore(t, stack)
		page, err := store.List(context.Background(), state.Query{Kind: "api-token"})
		if err != nil || page.Total != 0 {
			t.Fatalf("after revoke: %d tokens (%v)", page.Total, err)
		}
	})
	t.Run("redis needs its password", func(t *testing.T) {
		// redis-server or, without one on PATH, the embedded server: both have the password.
		if !strings.Contains(stack.RedisURL, "@") {
			t.Fatalf("the stack's Redis URL has no password")
		}
		conn, err := net.DialTimeout("tcp", stack.RedisAddr(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprint(conn, "*1\r\n$4\r\nPING\r\n") // a RESP array: the embedded server reads no inline commands
		line, _ := bufio.NewReader(conn).ReadString('\n')
		if !strings.HasPrefix(line, "-NOAUTH") {
			t.Fatalf("PING without a password answered %q", line)
		}
	})
	t.Run("the sealing key goes only where a manifest asks for it", func(t *testing.T) {
		for name, want := range map[string]bool{"simulation-api": true, "result-analyzer": false} {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", stack.PID(name)))
			if err != nil {
				t.Skipf("no /proc: %v", err)
			}
			if has := strings.Contains(string(raw), "LENS_SECRET_KEY="); has != want {
				t.Errorf("%s has LENS_SECRET_KEY: %t, want %t", name, has, want)
			}
		}
	})
	t.Run("functions listen on loopback only", func(t *testing.T) {
		u, _ := stack.FunctionURL("simulation-api")
		port, _ := strconv.Atoi(u[strings.LastIndex(u, ":")+1:])
		addr := listenAddress(t, port)
		if addr != "0100007F" {
			t.Fatalf("simulation-api listens on %s, want 127.0.0.1 (0100007F)", addr)
		}
	})
	t.Run("files under the data dir are private", func(t *testing.T) {
		err := filepath.Walk(stack.DataDir(), func(path string, info os.FileInfo, err error) error {
			if err != nil || path == stack.DataDir() || info.Mode()&os.ModeSymlink != 0 || info.Mode()&os.ModeSocket != 0 {
				return nil
			}
			if info.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s is %v", path, info.Mode().Perm())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// listenAddress is the hex local address /proc/net/tcp shows for a listening port.
func listenAddress(t *testing.T, port int) string {
	t.Helper()
	want := fmt.Sprintf(":%04X", port)
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Skipf("no %s: %v", file, err)
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 3 && strings.HasSuffix(f[1], want) && f[3] == "0A" { // 0A: LISTEN
				return strings.TrimSuffix(f[1], want)
			}
		}
	}
	t.Fatalf("port %d is not listening", port)
	return ""
}

func openStore(t *testing.T, stack *local.Stack) *redisstore.Store {
	t.Helper()
	store, err := redisstore.Open(context.Background(), stack.RedisURL, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// keyedEndpoint is an OpenAI-compatible model list behind a key, recording every Authorization
// header it was sent (by the API's probes).
type keyedEndpoint struct {
	key  string
	mu   sync.Mutex
	seen []string
	url  string
}

func newEndpoint(t *testing.T, key string) *keyedEndpoint {
	e := &keyedEndpoint{key: key}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, r.Header.Get("Authorization"))
		e.mu.Unlock()
		if e.key != "" && r.Header.Get("Authorization") != "Bearer "+e.key {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m"}]}`))
	}))
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/v1"
	return e
}

func (e *keyedEndpoint) sawKey(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, h := range e.seen {
		if strings.Contains(h, key) {
			return true
		}
	}
	return false
}

// TestLoopbackStackWithoutTokens: the loopback stack's default (LENS_AUTH=off) still refuses
// what a web page could send: other Hosts (DNS rebinding), other Origins (CSRF), non-JSON bodies;
// and everything else of the review holds over it.
func TestLoopbackStackWithoutTokens(t *testing.T) {
	stack := stacktest.Start(t, stacktest.Options{Only: []string{"simulation-api"}, Env: map[string]string{"LENS_ENDPOINT_DENY": "127.0.0.2"}})
	if stack.Auth() != "off" {
		t.Fatalf("the loopback stack runs with LENS_AUTH=%s", stack.Auth())
	}
	api := stack.APIURL + "/api/simulation"
	host := strings.TrimPrefix(stack.APIURL, "http://")
	port := host[strings.LastIndex(host, ":"):]

	t.Run("browser attacks", func(t *testing.T) {
		send(t, "GET", api+"/tasks", "", map[string]string{"Host": "rebind.attacker.example" + port}).want(t, 403, "not served here")
		send(t, "POST", api+"/tasks/0123abcd/stop", "", map[string]string{"Origin": "http://attacker.example"}).want(t, 403, "cross-origin")
		send(t, "POST", api+"/tasks", `{"scenario":"chat"}`, map[string]string{"Content-Type": "text/plain"}).want(t, 415, "application/json")
		send(t, "POST", api+"/tasks/0123abcd/stop", "", map[string]string{"Origin": "http://" + host}).want(t, 404, "no simulation task")
	})
	t.Run("bodies and numbers", func(t *testing.T) {
		send(t, "POST", api+"/tasks", `{"description":"`+strings.Repeat("d", 2<<20)+`"}`, nil).want(t, 413, "exceeds")
		send(t, "POST", api+"/tasks", `{"description":"`+strings.Repeat("d", 900<<10)+`"}`, nil).want(t, 422, "at most 4000")
		send(t, "POST", api+"/tasks", `{"backend_options":`+strings.Repeat(`{"a":`, 9000)+`1`+strings.Repeat(`}`, 9000)+`}`, nil).want(t, 422, "json_too_deep")
		for _, field := range []string{`"scale_factor":5e-324`, `"scale_factor":1e-300`, `"duration_seconds":1e308`} {
			send(t, "POST", api+"/tasks", `{`+field+`}`, nil).want(t, 422, "range")
		}
		fnURL, _ := stack.FunctionURL("simulation-api")
		send(t, "POST", fnURL+"/events", `{"pad":"`+strings.Repeat("x", 4<<20)+`"}`, map[string]string{"Ce-Specversion": "1.0",
			"Ce-Id": "big", "Ce-Source": "/x", "Ce-Type": "dev.lensfn.simulation.dataset.downloaded.v1"}).want(t, 413, "exceeds")
	})
	t.Run("ingress answers", func(t *testing.T) {
		for _, path := range []string{"/", "/api", "/nothing"} {
			send(t, "GET", stack.APIURL+path, "", nil).want(t, 404, "/api/simulation")
		}
		if r := send(t, "GET", stack.APIURL+"/healthz", "", nil); r.status != 200 || !strings.Contains(r.body, `"simulation-api":"running"`) {
			t.Fatalf("ingress healthz: %d %s", r.status, r.body)
		}
		r := send(t, "PUT", api+"/tasks", "", nil)
		r.want(t, 405, "method_not_allowed")
		if r.header.Get("Allow") != "GET, HEAD, POST" {
			t.Fatalf("Allow %q", r.header.Get("Allow"))
		}
	})
	t.Run("endpoint policy", func(t *testing.T) {
		send(t, "POST", api+"/models/discover", `{"endpoint_url":"http://169.254.169.254/v1"}`, nil).want(t, 400, "not allowed")
		send(t, "POST", api+"/models/discover", `{"endpoint_url":"http://127.0.0.2`+port+`/v1"}`, nil).want(t, 400, "not allowed")
		send(t, "POST", api+"/models/discover", `{"endpoint_url":"http://127.0.0.1:1/v1"}`, nil).want(t, 400, "unreachable")
	})
	t.Run("keys, artifacts and paths", func(t *testing.T) {
		datasets := filepath.Join(stack.DataDir(), "datasets")
		_ = os.MkdirAll(datasets, 0o700)
		trace := `{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}` + "\n" +
			`{"timestamp": 1000, "input_length": 10, "output_length": 5, "hash_ids": [1]}` + "\n"
		_ = os.WriteFile(filepath.Join(datasets, "lab.jsonl"), []byte(trace), 0o600)
		_ = os.WriteFile(filepath.Join(datasets, "lab.dataset.json"),
			[]byte(`{"name":"lab","filename":"lab.jsonl","scenario":"chat","trace_format":"mooncake_trace"}`), 0o600)
		_ = os.WriteFile(filepath.Join(datasets, "dot.dataset.json"),
			[]byte(`{"name":"dot","filename":"..","scenario":"chat","trace_format":"mooncake_trace"}`), 0o600)
		if r := send(t, "GET", api+"/trace-datasets", "", nil); strings.Contains(r.body, `"dot"`) || strings.Contains(r.body, stack.DataDir()) {
			t.Fatalf("datasets: %s", r.body)
		}
		const key = "SECRET-XYZ-123"
		own, other := newEndpoint(t, key), newEndpoint(t, "")
		r := send(t, "POST", api+"/tasks", `{"scenario":"chat","endpoint_url":"`+own.url+`","model_name":"m","api_key":"`+key+`","trace_dataset":"lab"}`, nil)
		r.want(t, 202, `"queued"`)
		var created struct {
			TaskID string `json:"task_id"`
		}
		_ = json.Unmarshal([]byte(r.body), &created)
		if strings.Contains(r.body, stack.DataDir()) || strings.Contains(r.body, key) {
			t.Fatalf("create answered %s", r.body)
		}
		send(t, "POST", api+"/tasks/"+created.TaskID+"/rerun", `{"endpoint_url":"`+other.url+`"}`, nil).want(t, 202, `"queued"`)
		if other.sawKey(key) {
			t.Fatal("the stored key was sent to the rerun's new endpoint")
		}

		// Whoever can write Redis points the record at the sealing key.
		store := openStore(t, stack)
		ctx := context.Background()
		rec, err := store.Get(ctx, simtask.Kind, created.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		task, _ := simtask.Unmarshal(rec.Doc)
		task.TaskDir = stack.DataDir()
		task.Result = &simtask.Result{Artifacts: []simtask.Artifact{{Kind: "summary-json", Path: filepath.Join(stack.DataDir(), "secret.key")}}}
		rec.Doc, _ = simtask.Marshal(task)
		if _, err := store.Update(ctx, rec, state.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := send(t, "GET", api+"/tasks/"+created.TaskID+"/artifacts/summary-json", "", nil)
		secretKey, _ := os.ReadFile(filepath.Join(stack.DataDir(), "secret.key"))
		if got.status != 404 || len(secretKey) == 0 || strings.Contains(got.body, strings.TrimSpace(string(secretKey))) {
			t.Fatalf("artifact of a tampered record: %d %s", got.status, got.body)
		}
		if body := send(t, "GET", api+"/tasks/"+created.TaskID, "", nil).body; strings.Contains(body, stack.DataDir()) {
			t.Fatalf("the task shows the data dir: %s", body)
		}
	})
}
