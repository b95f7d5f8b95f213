package loadgen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// TestErrorBodiesEchoingTheKeyAreRedacted: an endpoint that puts the caller's key in its error
// body does not get it into the records.
func TestErrorBodiesEchoingTheKeyAreRedacted(t *testing.T) {
	const key = "SECRET-XYZ-123"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"bad key ` + key + `; you sent ` + r.Header.Get("Authorization") + `"}}`))
	}))
	defer srv.Close()
	zero := 0.0
	sink := &memSink{}
	cfg := loadgen.Config{BaseURL: srv.URL, APIKey: key, Model: "m", API: loadgen.APIChat, Seed: 1}
	if _, err := loadgen.Run(context.Background(), cfg, []loadgen.Request{{ArrivalMs: &zero, InputTokens: 4, OutputTokens: 2}}, sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.byID()) != 1 || sink.byID()[0].Error == nil {
		t.Fatalf("%+v", sink.byID())
	}
	if msg := *sink.byID()[0].Error; strings.Contains(msg, key) || !strings.Contains(msg, "[REDACTED]") {
		t.Fatalf("record error %q", msg)
	}
}

// TestDialThroughThePolicy: with Config.Dial set to a policy's dialer, a denied endpoint gets
// no connection.
func TestDialThroughThePolicy(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	rules, _ := egress.ParseRules("", "127.0.0.0/8")
	zero := 0.0
	sink := &memSink{}
	cfg := loadgen.Config{BaseURL: srv.URL, Model: "m", API: loadgen.APIChat, Seed: 1, Dial: egress.New(rules).DialContext}
	if _, err := loadgen.Run(context.Background(), cfg, []loadgen.Request{{ArrivalMs: &zero, InputTokens: 4, OutputTokens: 2}}, sink); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 0 || len(sink.byID()) != 1 || sink.byID()[0].Error == nil || !strings.Contains(*sink.byID()[0].Error, "not allowed") {
		t.Fatalf("hits %d, records %+v", hits.Load(), sink.byID())
	}
}
