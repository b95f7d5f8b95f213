package problem_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/problem"
)

func serve(err error, reqID string) *httptest.ResponseRecorder {
	h := problem.WithRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, err)
	}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	if reqID != "" {
		req.Header.Set(problem.RequestIDHeader, reqID)
	}
	h.ServeHTTP(rec, req)
	return rec
}

func decode(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWriteMapsCodesToStatusAndShape(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"validation", problem.Validation(problem.Field("extra field not permitted", "extra_forbidden", "body", "foo")), 422, "validation_error"},
		{"bad request", problem.New(problem.CodeBadRequest, "endpoint refused: %s", "401"), 400, "bad_request"},
		{"not found", problem.New(problem.CodeNotFound, "no dataset %q", "x"), 404, "not_found"},
		{"conflict", problem.New(problem.CodeConflict, "dataset not downloaded"), 409, "conflict"},
		{"wrapped", errors.Join(errors.New("ctx"), problem.New(problem.CodeNotFound, "gone")), 404, "not_found"},
		{"plain error is internal", errors.New("redis: connection refused at 10.0.0.1"), 500, "internal_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(tc.err, "req-123")
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			m := decode(t, rec)
			if m["status"].(float64) != float64(tc.status) || m["code"] != tc.code || m["requestId"] != "req-123" {
				t.Fatalf("body %v", m)
			}
			if !strings.HasPrefix(m["type"].(string), problem.TypeBase) || m["title"] == "" {
				t.Fatalf("type/title missing: %v", m)
			}
		})
	}
}

func TestServerErrorDetailIsGeneric(t *testing.T) {
	secret := "redis://:hunter2@10.1.2.3"
	rec := serve(problem.Wrap(problem.CodeInternal, errors.New(secret), "store failed: "+secret), "")
	if strings.Contains(rec.Body.String(), "hunter2") || strings.Contains(rec.Body.String(), "store failed") {
		t.Fatalf("internal detail leaked: %s", rec.Body.String())
	}
	if rec.Header().Get(problem.RequestIDHeader) == "" {
		t.Fatal("no request id generated")
	}
}

func TestValidationDetailIsStructured(t *testing.T) {
	rec := serve(problem.Validation(problem.Field("must be between 50 and 2000", "range", "query", "bins")), "")
	m := decode(t, rec)
	detail, ok := m["detail"].([]any)
	if !ok || len(detail) != 1 {
		t.Fatalf("detail %v", m["detail"])
	}
	first := detail[0].(map[string]any)
	if first["msg"] != "must be between 50 and 2000" || first["loc"].([]any)[1] != "bins" {
		t.Fatalf("detail %v", first)
	}
}

func TestRequestIDRejectsHeaderInjection(t *testing.T) {
	rec := serve(problem.New(problem.CodeNotFound, "x"), "bad id with spaces")
	got := rec.Header().Get(problem.RequestIDHeader)
	if got == "bad id with spaces" || len(got) != 16 {
		t.Fatalf("request id %q", got)
	}
}

func TestRetryMeaning(t *testing.T) {
	if problem.CodeValidation.Retryable() || problem.CodeBadRequest.Retryable() {
		t.Fatal("client errors must not be retried")
	}
	if !problem.CodeUnavailable.Retryable() || !problem.CodeTooManyRequest.Retryable() {
		t.Fatal("transient errors must be retried")
	}
}

// TestNumbersAFieldCannotHoldAreNamed: 1e400 in a number field, a fraction or a huge value in
// an integer field say what is wrong with the number, not "expected a number, got a number".
func TestNumbersAFieldCannotHoldAreNamed(t *testing.T) {
	type body struct {
		Scale *float64 `json:"scale"`
		Count int      `json:"count"`
		Small int8     `json:"small"`
	}
	for raw, want := range map[string]string{
		`{"scale":1e400}`:                   "1e400 is out of range: a number must be within ±1.7976931348623157e+308",
		`{"count":1.5}`:                     "expected an integer, got 1.5",
		`{"count":1e3}`:                     "expected an integer, got 1e3",
		`{"small":300}`:                     "300 is out of range for an integer here",
		`{"count":"7"}`:                     "expected an integer, got a string",
		`{"count":99999999999999999999999}`: "99999999999999999999999 is out of range",
	} {
		var v body
		err := problem.DecodeStrict([]byte(raw), &v)
		detail, _ := json.Marshal(problem.BodyFor(err, "").Detail)
		if err == nil || !strings.Contains(string(detail), want) || strings.Contains(string(detail), "got a number") {
			t.Errorf("%s: %s, want %q", raw, detail, want)
		}
	}
}
