package security_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/tests/stacktest"
)

// TestRoundTwo reproduces, over the local stack with LENS_AUTH=required, the attack classes of
// the second review: IPv6 zone ids past the endpoint policy, cross-origin writes to the
// simulator's /admin, events posted to the Broker from outside the stack, event streams
// exhausting the store's pool, and an endpoint key following a redirect to another port.
func TestRoundTwo(t *testing.T) {
	stack := stacktest.Start(t, stacktest.Options{Only: []string{"inference-sim", "simulation-api"}, Auth: "required",
		Env: map[string]string{"LENS_ENDPOINT_DENY": "::1"}})
	api := stack.APIURL + "/api/simulation"
	runner, _, err := lensfnLocal(t, stack, "create", "--scopes", "simulation:read,simulation:run", "--name", "runner")
	if err != nil {
		t.Fatal(err)
	}
	reader, _, err := lensfnLocal(t, stack, "create", "--scopes", "simulation:read", "--name", "reader")
	if err != nil {
		t.Fatal(err)
	}
	run := map[string]string{"Authorization": "Bearer " + runner}

	t.Run("zone ids", func(t *testing.T) {
		l, err := net.Listen("tcp", "[::1]:0")
		if err != nil {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		var hits atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m"}]}`))
		}))
		srv.Listener = l
		srv.Start()
		defer srv.Close()
		_, port, _ := net.SplitHostPort(l.Addr().String())
		for _, endpoint := range []string{"http://[::1%25lo]:" + port + "/v1", "http://[::1%251]:" + port + "/v1",
			"http://[::1]:" + port + "/v1", "http://[fe80::1%25eth0]/v1", "http://[fd00:ec2::254%25eth0]/v1", "http://[::ffff:169.254.169.254]/v1"} {
			send(t, "POST", api+"/models/discover", `{"endpoint_url":"`+endpoint+`"}`, run).want(t, 400, "not allowed")
		}
		if hits.Load() != 0 {
			t.Fatalf("the denied server on [::1] was reached %d times", hits.Load())
		}
	})

	t.Run("cross-origin admin", func(t *testing.T) {
		sim, ok := stack.FunctionURL("inference-sim")
		if !ok || stack.SimAdminToken() == "" {
			t.Fatal("the stack's simulator has no admin token")
		}
		host := strings.TrimPrefix(sim, "http://")
		admin := "Bearer " + stack.SimAdminToken()
		for _, tc := range []struct {
			name    string
			header  map[string]string
			ct      string
			status  int
			mention string
		}{
			{"no token", nil, "application/json", 401, "admin token"},
			{"a page's text/plain POST", map[string]string{"Authorization": admin, "Origin": "http://evil.example"}, "text/plain", 403, "cross-origin"},
			{"text/plain without Origin", map[string]string{"Authorization": admin}, "text/plain", 415, "application/json"},
			{"a rebinding Host", map[string]string{"Authorization": admin, "Host": "rebind.evil.example" + host[strings.LastIndex(host, ":"):]}, "application/json", 403, "does not answer host"},
		} {
			status, body := rawPost(t, sim+"/admin/config", tc.ct, `{"failure-injection-rate":100}`, tc.header)
			if status != tc.status || !strings.Contains(body, tc.mention) {
				t.Errorf("%s: %d %s, want %d mentioning %q", tc.name, status, body, tc.status, tc.mention)
			}
		}
		status, body := rawPost(t, sim+"/admin/config", "application/json", `{"failure-injection-rate":0}`, map[string]string{"Authorization": admin})
		if status != 200 || !strings.Contains(body, `"failure-injection-rate":0`) {
			t.Fatalf("the operator's own update: %d %s", status, body)
		}
	})

	t.Run("the broker", func(t *testing.T) {
		event := map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "round2-1", "Ce-Source": "/lensfn/evil",
			"Ce-Type": "dev.lensfn.simulation.dataset.downloaded.v1"}
		with := func(extra map[string]string) map[string]string {
			h := map[string]string{}
			for k, v := range event {
				h[k] = v
			}
			for k, v := range extra {
				h[k] = v
			}
			return h
		}
		port := stack.BrokerURL[strings.LastIndex(stack.BrokerURL, ":"):]
		credential := "Bearer " + stack.EventToken()
		for _, tc := range []struct {
			name   string
			header map[string]string
			status int
		}{
			{"no credential", nil, 401},
			{"a wrong credential", map[string]string{"Authorization": "Bearer " + reader}, 401},
			{"Host evil.example", map[string]string{"Host": "evil.example" + port, "Authorization": credential}, 403},
			{"a page's Origin", map[string]string{"Origin": "http://evil.example", "Authorization": credential}, 403},
		} {
			if status, body := rawPost(t, stack.BrokerURL, "application/json", `{}`, with(tc.header)); status != tc.status || strings.Contains(body, stack.EventToken()) {
				t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.status)
			}
		}
		fnURL, _ := stack.FunctionURL("simulation-api")
		if status, _ := rawPost(t, fnURL+"/events", "application/json", `{}`, with(nil)); status != 401 {
			t.Errorf("an event posted to the function directly without the credential: %d", status)
		}
		raw, err := os.ReadFile(filepath.Join(stack.DataDir(), "events.token"))
		if err != nil || strings.TrimSpace(string(raw)) != stack.EventToken() {
			t.Fatalf("the event credential is not in the data dir: %v", err)
		}
		if info, err := os.Stat(filepath.Join(stack.DataDir(), "events.token")); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("events.token: %v %v", info, err)
		}
	})

	t.Run("event streams and the store's pool", func(t *testing.T) {
		task := queuedTask(t, stack.DataDir(), api, run)
		streams := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 200}}
		var open sync.WaitGroup
		var opened atomic.Int32
		bodies := make(chan *http.Response, 200)
		for range 128 {
			open.Add(1)
			go func() {
				defer open.Done()
				req, _ := http.NewRequest("GET", api+"/tasks/"+task+"/events", nil)
				req.Header.Set("Authorization", "Bearer "+reader)
				resp, err := streams.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				if resp.StatusCode == 200 {
					opened.Add(1)
					_, _ = bufio.NewReader(resp.Body).ReadString('\n') // the stream is flowing
				}
				bodies <- resp
			}()
		}
		open.Wait()
		defer func() {
			close(bodies)
			for resp := range bodies {
				resp.Body.Close()
			}
		}()
		if opened.Load() != 128 {
			t.Fatalf("%d of 128 streams opened", opened.Load())
		}
		time.Sleep(3 * time.Second) // every stream is waiting on the store
		for i := range 20 {
			start := time.Now()
			r := send(t, "GET", api+"/tasks/"+task, "", map[string]string{"Authorization": "Bearer " + reader})
			if took := time.Since(start); r.status != 200 || took > time.Second {
				t.Fatalf("GET %d beside 128 streams: %d in %v: %s", i, r.status, took, r.body)
			}
		}
		send(t, "GET", api+"/tasks/"+task+"/events", "", map[string]string{"Authorization": "Bearer " + reader}).want(t, 429, "too many event streams")
	})

	t.Run("redirects keep the key on its origin", func(t *testing.T) {
		const key = "ROUND2-KEY-987"
		var sawKey atomic.Value
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sawKey.Store(r.Header.Get("Authorization"))
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m"}]}`))
		}))
		defer other.Close()
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect) // the same host, another port
		}))
		defer front.Close()
		r := send(t, "POST", api+"/models/discover", `{"endpoint_url":"`+front.URL+`/v1","api_key":"`+key+`"}`, run)
		if r.status != 200 || strings.Contains(r.body, key) {
			t.Fatalf("discover through a redirect: %d %s", r.status, r.body)
		}
		if got, _ := sawKey.Load().(string); strings.Contains(got, key) {
			t.Fatalf("the key followed the redirect to another port: %q", got)
		}
	})
}

// rawPost is send with a Content-Type of its own (send's header map sets it after its default),
// returning the status and body whatever their format.
func rawPost(t *testing.T, url, contentType, body string, header map[string]string) (int, string) {
	t.Helper()
	h := map[string]string{"Content-Type": contentType}
	for k, v := range header {
		h[k] = v
	}
	r := send(t, "POST", url, body, h)
	return r.status, r.body
}

// queuedTask creates a task that stays queued (no trace-replayer runs) and returns its id.
func queuedTask(t *testing.T, dataDir, api string, header map[string]string) string {
	t.Helper()
	datasets := filepath.Join(dataDir, "datasets")
	_ = os.MkdirAll(datasets, 0o700)
	trace := `{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}` + "\n"
	_ = os.WriteFile(filepath.Join(datasets, "queued.jsonl"), []byte(trace), 0o600)
	_ = os.WriteFile(filepath.Join(datasets, "queued.dataset.json"),
		[]byte(`{"name":"queued","filename":"queued.jsonl","scenario":"chat","trace_format":"mooncake_trace"}`), 0o600)
	endpoint := newEndpoint(t, "")
	r := send(t, "POST", api+"/tasks", `{"scenario":"chat","endpoint_url":"`+endpoint.url+`","model_name":"m","trace_dataset":"queued"}`, header)
	r.want(t, 202, `"queued"`)
	var created struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(r.body), &created); err != nil || created.TaskID == "" {
		t.Fatalf("create: %s", r.body)
	}
	return created.TaskID
}
