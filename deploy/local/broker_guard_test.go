package local

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBrokerRefusesForeignHostOriginAndMissingCredential: the local Broker's ingress takes an
// event only with the stack's Host, no Origin and, when it has one, the event credential; a
// refused event reaches no subscriber, and an accepted one arrives carrying the credential.
func TestBrokerRefusesForeignHostOriginAndMissingCredential(t *testing.T) {
	var mu sync.Mutex
	var delivered []string // the Authorization of each delivery
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		delivered = append(delivered, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer sub.Close()
	const token = "event-credential-1234"
	b := &Broker{
		Triggers: []Trigger{{Name: "work", Attributes: map[string]string{"type": "dev.lensfn.work.v1"}, Subscriber: "sub", Path: "/events"}},
		Resolve:  func(string) (string, bool) { return sub.URL, true },
		Delivery: Delivery{Retry: 0, Backoff: time.Millisecond, Timeout: time.Second},
		Hosts:    strings.Split(loopbackHosts, ","), Token: token,
	}
	srv := httptest.NewServer(b)
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	post := func(header map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"x":1}`))
		for k, v := range map[string]string{"Content-Type": "application/json", "Ce-Specversion": "1.0", "Ce-Id": "e1",
			"Ce-Source": "/test", "Ce-Type": "dev.lensfn.work.v1"} {
			req.Header.Set(k, v)
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		body.Write(buf[:n])
		return resp.StatusCode, body.String()
	}
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name    string
		header  map[string]string
		status  int
		mention string
	}{
		{"rebinding Host", map[string]string{"Host": "evil.example" + port, "Authorization": bearer}, 403, "not served here"},
		{"a page's Origin", map[string]string{"Origin": "http://evil.example", "Authorization": bearer}, 403, "cross-origin"},
		{"no credential", nil, 401, "event credential"},
		{"a wrong credential", map[string]string{"Authorization": "Bearer nope"}, 401, "event credential"},
	} {
		if status, body := post(tc.header); status != tc.status || !strings.Contains(body, tc.mention) || strings.Contains(body, token) {
			t.Errorf("%s: %d %s, want %d mentioning %q", tc.name, status, body, tc.status, tc.mention)
		}
	}
	b.Wait()
	mu.Lock()
	if len(delivered) != 0 {
		t.Fatalf("refused events were delivered: %v", delivered)
	}
	mu.Unlock()
	for _, host := range []string{"", "localhost" + port, "[::1]" + port} {
		if status, body := post(map[string]string{"Host": cmpHost(host, srv.URL), "Authorization": bearer}); status != 202 {
			t.Fatalf("host %q with the credential: %d %s", host, status, body)
		}
	}
	b.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(delivered) != 3 || delivered[0] != bearer {
		t.Fatalf("deliveries carried %v, want the credential 3 times", delivered)
	}
}

// cmpHost is host, or the server's own host:port when host is empty.
func cmpHost(host, url string) string {
	if host == "" {
		return strings.TrimPrefix(url, "http://")
	}
	return host
}
