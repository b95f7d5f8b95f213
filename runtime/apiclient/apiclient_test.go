package apiclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/apiclient"
)

func newClient(t *testing.T, base string, opts apiclient.Options) *apiclient.Client {
	t.Helper()
	c, err := apiclient.New(base, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestJSONSendsTheTokenAndBodyAndDecodesTheAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Content-Type") != "application/json" ||
			r.URL.Path != "/api/x" || r.URL.Query().Get("limit") != "5" {
			http.Error(w, "bad request "+r.Header.Get("Authorization"), 400)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		_, _ = w.Write([]byte(`{"echo":` + string(raw) + `}`))
	}))
	defer srv.Close()
	var observed atomic.Int32
	c := newClient(t, srv.URL+"/", apiclient.Options{Observe: func(path string, status int, _ time.Duration) {
		if path == "/api/x" && status == 200 {
			observed.Add(1)
		}
	}})
	var out struct {
		Echo struct{ N int } `json:"echo"`
	}
	if err := c.JSON(context.Background(), "tok", "POST", "/api/x", map[string][]string{"limit": {"5"}}, map[string]int{"N": 7}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Echo.N != 7 || observed.Load() != 1 {
		t.Fatalf("echo %+v observed %d", out, observed.Load())
	}
}

func TestProblemAnswersBecomeErrors(t *testing.T) {
	answers := map[string]string{
		"/validation": `{"type":"about:blank","title":"Unprocessable Entity","status":422,"code":"validation_error","requestId":"r-1",` +
			`"detail":[{"loc":["body","endpoint_url"],"msg":"must be a URL","type":"value_error"},{"loc":["query","limit"],"msg":"too big","type":"value_error"}]}`,
		"/missing": `{"type":"about:blank","title":"Not Found","status":404,"detail":"no task t-1","code":"not_found"}`,
		"/text":    "upstream exploded\nstack...",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := map[string]int{"/validation": 422, "/missing": 404, "/text": 502}[r.URL.Path]
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(answers[r.URL.Path]))
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, apiclient.Options{})
	ctx := context.Background()

	err := c.JSON(ctx, "", "POST", "/validation", nil, struct{}{}, nil)
	e, ok := apiclient.As(err)
	if !ok || e.Status != 422 || e.Code != "validation_error" || e.RequestID != "r-1" || len(e.Fields) != 2 ||
		e.Fields[0].Field() != "endpoint_url" || e.Fields[1].Field() != "limit" || e.Detail != "endpoint_url: must be a URL; limit: too big" {
		t.Fatalf("validation: %#v", err)
	}
	err = c.JSON(ctx, "", "GET", "/missing", nil, nil, nil)
	if e, ok := apiclient.As(err); !ok || !e.NotFound() || e.Detail != "no task t-1" || e.Title != "Not Found" {
		t.Fatalf("missing: %#v", err)
	}
	err = c.JSON(ctx, "", "GET", "/text", nil, nil, nil)
	if e, ok := apiclient.As(err); !ok || e.Status != 502 || e.Title != "Bad Gateway" || e.Detail != "upstream exploded" {
		t.Fatalf("text: %#v", err)
	}
}

func TestAnswersAreBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/error" {
			w.WriteHeader(500)
			_, _ = w.Write([]byte(`{"title":"` + strings.Repeat("x", 2*apiclient.MaxErrorBody) + `"}`))
			return
		}
		_, _ = w.Write([]byte(`["` + strings.Repeat("x", 2000) + `"]`))
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, apiclient.Options{MaxBody: 1000})
	var out []string
	if err := c.JSON(context.Background(), "", "GET", "/big", nil, nil, &out); !errors.Is(err, apiclient.ErrTooLarge) || out != nil {
		t.Fatalf("an answer over the bound: %v (%d items)", err, len(out))
	}
	// An error body over its bound is cut, so it is no problem JSON: status text, bounded detail.
	err := c.JSON(context.Background(), "", "GET", "/error", nil, nil, nil)
	if e, ok := apiclient.As(err); !ok || e.Status != 500 || len(e.Detail) > 400 {
		t.Fatalf("an error body over its bound: %v", err)
	}
}

func TestTheTokenNeverFollowsARedirectToAnotherHost(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte(`{"auth":"` + r.Header.Get("Authorization") + `"}`))
	}))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
		case "/here":
			_, _ = w.Write([]byte(`{"auth":"` + r.Header.Get("Authorization") + `"}`))
		}
	}))
	defer api.Close()
	c := newClient(t, api.URL, apiclient.Options{})
	var out struct{ Auth string }
	err := c.JSON(context.Background(), "secret-token", "GET", "/away", nil, nil, &out)
	e, ok := apiclient.As(err)
	if !ok || e.Status != http.StatusFound || !strings.Contains(e.Detail, "not followed") || elsewhere.Load() != 0 {
		t.Fatalf("a redirect to another host: %v, other host called %d times", err, elsewhere.Load())
	}
	if strings.Contains(err.Error(), "secret-token") {
		t.Fatal("the error names the token")
	}
	if err := c.JSON(context.Background(), "secret-token", "GET", "/moved", nil, nil, &out); err != nil || out.Auth != "Bearer secret-token" {
		t.Fatalf("a redirect on the API's own host is followed with the token: %v %+v", err, out)
	}
}

func TestTransportFailuresNameTheURLNotTheToken(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	c := newClient(t, base, apiclient.Options{Timeout: 5 * time.Second})
	err := c.JSON(context.Background(), "secret-token", "GET", "/api/x", nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), base+"/api/x") || strings.Contains(err.Error(), "secret-token") {
		t.Fatalf("%v", err)
	}
	if _, isAPI := apiclient.As(err); isAPI {
		t.Fatal("no answer is not an API error")
	}
	if _, err := apiclient.New("ftp://x", apiclient.Options{}); err == nil {
		t.Fatal("a non-http base accepted")
	}
}
