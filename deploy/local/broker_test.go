package local

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func sendEvent(t *testing.T, url, id, ceType string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"x":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Id", id)
	req.Header.Set("Ce-Source", "/test")
	req.Header.Set("Ce-Type", ceType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestBrokerRetriesDeadLettersAndPublishesReplies(t *testing.T) {
	var mu sync.Mutex
	attempts := map[string]int{}
	var replies atomic.Int32
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Ce-Id")
		mu.Lock()
		attempts[id]++
		n := attempts[id]
		mu.Unlock()
		switch {
		case r.Header.Get("Ce-Type") == "dev.lensfn.reply.v1":
			replies.Add(1)
			w.WriteHeader(http.StatusAccepted)
		case id == "flaky" && n < 3:
			w.WriteHeader(http.StatusServiceUnavailable)
		case id == "poison":
			http.Error(w, "bad payload", http.StatusBadRequest)
		case id == "callable":
			w.Header().Set("Ce-Specversion", "1.0")
			w.Header().Set("Ce-Id", "reply-1")
			w.Header().Set("Ce-Source", "/sub")
			w.Header().Set("Ce-Type", "dev.lensfn.reply.v1")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{}`))
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer sub.Close()
	dead := filepath.Join(t.TempDir(), "dead.jsonl")
	b := &Broker{
		Triggers: []Trigger{
			{Name: "work", Attributes: map[string]string{"type": "dev.lensfn.work.v1"}, Subscriber: "sub", Path: "/events"},
			{Name: "replies", Attributes: map[string]string{"type": "dev.lensfn.reply.v1"}, Subscriber: "sub", Path: "/events"},
			{Name: "gone", Attributes: map[string]string{"type": "dev.lensfn.gone.v1"}, Subscriber: "missing", Path: "/events"},
		},
		Resolve: func(name string) (string, bool) {
			if name == "sub" {
				return sub.URL, true
			}
			return "", false
		},
		Delivery:   Delivery{Retry: 3, Backoff: 5 * time.Millisecond, Timeout: time.Second},
		DeadLetter: dead,
	}
	srv := httptest.NewServer(b)
	defer srv.Close()
	for _, id := range []string{"ok", "flaky", "poison", "callable"} {
		if code := sendEvent(t, srv.URL, id, "dev.lensfn.work.v1"); code != 202 {
			t.Fatalf("%s: %d", id, code)
		}
	}
	sendEvent(t, srv.URL, "lost", "dev.lensfn.gone.v1")
	if code := sendEvent(t, srv.URL, "", "dev.lensfn.work.v1"); code != 400 {
		t.Fatalf("an event without id was accepted: %d", code)
	}
	b.Wait()
	mu.Lock()
	defer mu.Unlock()
	if attempts["ok"] != 1 || attempts["flaky"] != 3 || attempts["poison"] != 1 {
		t.Fatalf("attempts %v", attempts)
	}
	if replies.Load() != 1 {
		t.Fatalf("reply published %d times", replies.Load())
	}
	raw, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 {
		t.Fatalf("dead letters: %s", raw)
	}
	for _, want := range []string{`"id":"poison"`, `"knativeerrorcode":400`, `"id":"lost"`, `"knativeerrorcode":0`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("dead letters lack %s", want)
		}
	}
}

func TestISODurations(t *testing.T) {
	for in, want := range map[string]time.Duration{"PT0.5S": 500 * time.Millisecond, "PT60S": time.Minute, "PT1M30S": 90 * time.Second} {
		got, err := isoDuration(in)
		if err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "0.5s", "P1D", "PTX"} {
		if _, err := isoDuration(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestBrokerEventWithoutSubscriberIsNoProblem: an event no Trigger matches (workflow.finished,
// published for whoever subscribes) is accepted, dead-letters nothing and goes to the debug log
// only, as in Knative.
func TestBrokerEventWithoutSubscriberIsNoProblem(t *testing.T) {
	var mu sync.Mutex
	var logged, debugged []string
	record := func(to *[]string) func(string, ...any) {
		return func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			*to = append(*to, fmt.Sprintf(format, args...))
		}
	}
	dead := filepath.Join(t.TempDir(), "dead.jsonl")
	b := &Broker{Triggers: []Trigger{{Name: "work", Attributes: map[string]string{"type": "dev.lensfn.work.v1"}, Subscriber: "sub", Path: "/events"}},
		Resolve: func(string) (string, bool) { return "", false }, Delivery: Delivery{Timeout: time.Second}, DeadLetter: dead,
		Log: record(&logged), Debug: record(&debugged)}
	srv := httptest.NewServer(b)
	defer srv.Close()
	if code := sendEvent(t, srv.URL, "wf-1/finished", "dev.lensfn.evaluation.workflow.finished.v1"); code != 202 {
		t.Fatalf("%d", code)
	}
	b.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 0 {
		t.Fatalf("an event without a subscriber was logged as a problem: %q", logged)
	}
	if len(debugged) != 1 || !strings.Contains(debugged[0], "no trigger for dev.lensfn.evaluation.workflow.finished.v1") {
		t.Fatalf("debug log %q", debugged)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("an event without a subscriber was dead-lettered: %v", err)
	}
	// Without a debug logger the note is dropped.
	quiet := &Broker{Resolve: b.Resolve, Delivery: b.Delivery, DeadLetter: dead, Log: b.Log}
	srv2 := httptest.NewServer(quiet)
	defer srv2.Close()
	mu.Unlock()
	code := sendEvent(t, srv2.URL, "wf-2/finished", "dev.lensfn.evaluation.workflow.finished.v1")
	quiet.Wait()
	mu.Lock()
	if code != 202 || len(logged) != 0 {
		t.Fatalf("%d %q", code, logged)
	}
}
