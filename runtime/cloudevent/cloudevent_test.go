package cloudevent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/problem"
)

// memDedupe is an in-memory Deduper with the same semantics as the Redis one.
type memDedupe struct {
	mu      sync.Mutex
	keys    map[string]string
	renewed atomic.Int32
}

func newMemDedupe() *memDedupe { return &memDedupe{keys: map[string]string{}} }

func (m *memDedupe) Claim(_ context.Context, key string, _ time.Duration) (cloudevent.ClaimState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch v, ok := m.keys[key]; {
	case !ok:
		m.keys[key] = "pending"
		return cloudevent.ClaimNew, nil
	case v == "pending":
		return cloudevent.ClaimPending, nil
	}
	return cloudevent.ClaimDone, nil
}

func (m *memDedupe) Renew(context.Context, string, time.Duration) error {
	m.renewed.Add(1)
	return nil
}

func (m *memDedupe) Complete(_ context.Context, key, outcome string, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[key] = "done:" + outcome
	return nil
}

func (m *memDedupe) Abandon(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, key)
	return nil
}

var payload = events.DatasetDownloaded{Dataset: "mooncake-conversation", TraceFormat: "mooncake_trace",
	Path: "/data/conversation_trace.jsonl", SHA256: "b8cb", SizeBytes: 3029533}

func newSender(t *testing.T, sink string, ext map[string]string) *cloudevent.Sender {
	t.Helper()
	s, err := cloudevent.NewSender(cloudevent.SenderConfig{Sink: sink, Source: events.SourceSimulationAPI,
		Extensions: ext, Retries: 3, Backoff: 5 * time.Millisecond, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDuplicateDeliveryHasOneSideEffect(t *testing.T) {
	var sideEffects atomic.Int32
	var got cloudevent.Event
	recv, err := cloudevent.NewReceiver(cloudevent.ReceiverConfig{
		Dedupe: newMemDedupe(),
		Handlers: map[string]cloudevent.Handler{events.TypeDatasetDownloaded: func(_ context.Context, e cloudevent.Event) error {
			var d events.DatasetDownloaded
			if err := e.DecodeData(&d); err != nil {
				return err
			}
			got = e
			sideEffects.Add(1)
			return nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	s := newSender(t, srv.URL, map[string]string{"cluster": "lab1"})
	for range 3 {
		if err := s.Send(context.Background(), events.TypeDatasetDownloaded, "dl-1", "mooncake-conversation", payload); err != nil {
			t.Fatal(err)
		}
	}
	if n := sideEffects.Load(); n != 1 {
		t.Fatalf("side effects = %d, want 1", n)
	}
	if got.Extensions["cluster"] != "lab1" || got.Subject != "mooncake-conversation" || got.Source != events.SourceSimulationAPI {
		t.Fatalf("attributes lost: %+v", got)
	}
	if !strings.HasSuffix(got.DataSchema, events.SchemaFile(events.TypeDatasetDownloaded)) {
		t.Fatalf("dataschema %q", got.DataSchema)
	}
}

func TestReceiverAnswersByOutcome(t *testing.T) {
	failOnce := true
	recv, _ := cloudevent.NewReceiver(cloudevent.ReceiverConfig{
		Dedupe: newMemDedupe(),
		Handlers: map[string]cloudevent.Handler{events.TypeDatasetDownloaded: func(_ context.Context, e cloudevent.Event) error {
			if e.ID == "poison" {
				return cloudevent.Permanent(errors.New("bad payload"))
			}
			if e.ID == "flaky" && failOnce {
				failOnce = false
				return errors.New("redis timeout")
			}
			switch e.ID {
			case "gone":
				return problem.New(problem.CodeNotFound, "no such task")
			case "busy":
				return problem.New(problem.CodeTooManyRequest, "another worker holds the task")
			case "down":
				return problem.Wrap(problem.CodeUnavailable, errors.New("dial tcp: connection refused"), "store down")
			}
			return nil
		}},
	})
	post := func(id, ceType, body string) int {
		code, _ := postHeaders(recv, id, ceType, body)
		return code
	}

	cases := []struct {
		name, id, ceType string
		want             int
	}{
		{"handled", "a", events.TypeDatasetDownloaded, 202},
		{"duplicate", "a", events.TypeDatasetDownloaded, 200},
		{"unknown type", "b", "dev.lensfn.other.thing.v1", 400},
		{"poison", "poison", events.TypeDatasetDownloaded, 400},
		{"poison again stays rejected", "poison", events.TypeDatasetDownloaded, 200},
		{"transient failure asks for redelivery", "flaky", events.TypeDatasetDownloaded, 500},
		{"redelivery succeeds", "flaky", events.TypeDatasetDownloaded, 202},
		// One vocabulary: the problem code table decides what is retried.
		{"a code that is not retryable is a 400, even 404 (Knative redelivers 404)", "gone", events.TypeDatasetDownloaded, 400},
		{"and it is remembered", "gone", events.TypeDatasetDownloaded, 200},
		{"a retryable code answers its status", "busy", events.TypeDatasetDownloaded, 429},
		{"and the claim is released for the redelivery", "busy", events.TypeDatasetDownloaded, 429},
		{"unavailable", "down", events.TypeDatasetDownloaded, 503},
	}
	for _, tc := range cases {
		if got := post(tc.id, tc.ceType, `{}`); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	// Missing required attributes: malformed, never retried.
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	recv.ServeHTTP(rec, req)
	if rec.Code != 400 {
		t.Fatalf("malformed event: %d", rec.Code)
	}
}

func postHeaders(recv http.Handler, id, ceType, body string) (int, http.Header) {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Id", id)
	req.Header.Set("Ce-Type", ceType)
	req.Header.Set("Ce-Source", "/test")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	recv.ServeHTTP(rec, req)
	return rec.Code, rec.Header()
}

// TestRetryableAnswersCarryRetryAfter: 429 and 503 tell the broker when to come back, as
// problem+json.
func TestRetryableAnswersCarryRetryAfter(t *testing.T) {
	recv, _ := cloudevent.NewReceiver(cloudevent.ReceiverConfig{Dedupe: newMemDedupe(),
		Handlers: map[string]cloudevent.Handler{events.TypeDatasetDownloaded: func(context.Context, cloudevent.Event) error {
			return problem.New(problem.CodeUnavailable, "store down")
		}}})
	code, h := postHeaders(recv, "x", events.TypeDatasetDownloaded, `{}`)
	if code != 503 || h.Get("Retry-After") == "" || h.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d %v", code, h)
	}
}

// TestClaimIsRenewedWhileTheHandlerRuns: a handler that runs longer than the pending TTL keeps
// its claim (renewed every third of the TTL), so the TTL can be short enough that a crashed
// handler's claim frees before the broker gives up.
func TestClaimIsRenewedWhileTheHandlerRuns(t *testing.T) {
	d := newMemDedupe()
	recv, _ := cloudevent.NewReceiver(cloudevent.ReceiverConfig{Dedupe: d, PendingTTL: 60 * time.Millisecond,
		Handlers: map[string]cloudevent.Handler{events.TypeDatasetDownloaded: func(context.Context, cloudevent.Event) error {
			time.Sleep(300 * time.Millisecond)
			return nil
		}}})
	if code, _ := postHeaders(recv, "long", events.TypeDatasetDownloaded, `{}`); code != 202 {
		t.Fatalf("status %d", code)
	}
	if n := d.renewed.Load(); n < 3 {
		t.Fatalf("the claim was renewed %d times during a handler 5 TTLs long", n)
	}
	after := d.renewed.Load()
	time.Sleep(100 * time.Millisecond)
	if d.renewed.Load() != after {
		t.Fatal("the claim is still renewed after the handler returned")
	}
}

func TestPendingClaimAsksBrokerToRetryLater(t *testing.T) {
	d := newMemDedupe()
	release := make(chan struct{})
	started := make(chan struct{})
	recv, _ := cloudevent.NewReceiver(cloudevent.ReceiverConfig{Dedupe: d,
		Handlers: map[string]cloudevent.Handler{events.TypeDatasetDownloaded: func(context.Context, cloudevent.Event) error {
			close(started)
			<-release
			return nil
		}}})
	srv := httptest.NewServer(recv)
	defer srv.Close()
	send := func() int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
		req.Header.Set("Ce-Specversion", "1.0")
		req.Header.Set("Ce-Id", "slow")
		req.Header.Set("Ce-Type", events.TypeDatasetDownloaded)
		req.Header.Set("Ce-Source", "/test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	first := make(chan int)
	go func() { first <- send() }()
	<-started
	if got := send(); got != http.StatusTooManyRequests {
		t.Fatalf("concurrent redelivery: %d, want 429", got)
	}
	close(release)
	if got := <-first; got != http.StatusAccepted {
		t.Fatalf("first delivery: %d", got)
	}
}

// TestConcurrentDeliveriesNeverHang guards against the sdk-go receive-handler hang.
func TestConcurrentDeliveriesNeverHang(t *testing.T) {
	var handled atomic.Int32
	recv, _ := cloudevent.NewReceiver(cloudevent.ReceiverConfig{Dedupe: newMemDedupe(),
		Handlers: map[string]cloudevent.Handler{events.TypeDatasetDownloaded: func(context.Context, cloudevent.Event) error {
			handled.Add(1)
			return nil
		}}})
	srv := httptest.NewServer(recv)
	defer srv.Close()
	s := newSender(t, srv.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2000)
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				if err := s.Send(ctx, events.TypeDatasetDownloaded, fmt.Sprintf("c-%d-%d", w, i), "", payload); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if handled.Load() != 32*40 {
		t.Fatalf("handled %d of %d", handled.Load(), 32*40)
	}
}

func TestSenderRetriesTransientFailuresAndNotRejections(t *testing.T) {
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := attempts.Add(1)
		if r.Header.Get("Ce-Id") == "bad" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	var outcomes []string
	s, _ := cloudevent.NewSender(cloudevent.SenderConfig{Sink: srv.URL, Source: "/t", Retries: 4, Backoff: time.Millisecond,
		Observe: func(_, outcome string) { outcomes = append(outcomes, outcome) }})
	if err := s.Send(context.Background(), events.TypeDatasetDownloaded, "ok", "", payload); err != nil {
		t.Fatalf("send after retries: %v", err)
	}
	if attempts.Load() != 3 {
		t.Fatalf("attempts %d, want 3", attempts.Load())
	}
	attempts.Store(10)
	if err := s.Send(context.Background(), events.TypeDatasetDownloaded, "bad", "", payload); err == nil {
		t.Fatal("a 400 must be an error")
	}
	if attempts.Load() != 11 {
		t.Fatalf("a 400 was retried: %d attempts", attempts.Load()-10)
	}
	if strings.Join(outcomes, ",") != "ok,rejected" {
		t.Fatalf("outcomes %v", outcomes)
	}
}

func TestSenderRefusesUncataloguedTypesAndMissingSink(t *testing.T) {
	s := newSender(t, "", nil)
	if err := s.Send(context.Background(), events.TypeDatasetDownloaded, "x", "", payload); !errors.Is(err, cloudevent.ErrNoSink) {
		t.Fatalf("no sink: %v", err)
	}
	s = newSender(t, "http://127.0.0.1:1", nil)
	if err := s.Send(context.Background(), "dev.lensfn.unknown.v1", "x", "", payload); err == nil || !strings.Contains(err.Error(), "catalogue") {
		t.Fatalf("uncatalogued type: %v", err)
	}
}
