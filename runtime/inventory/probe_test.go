package inventory_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
)

func TestListModelsSaysOnlyNotAllowedOrUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			if r.Header.Get("Authorization") != "Bearer sk-1" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(`{"data":[{"id":"a"},{"id":"b"}]}`))
		case "/html/v1/models":
			_, _ = w.Write([]byte(`<html>`))
		case "/big/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"` + strings.Repeat("x", 1<<20) + `"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	client := srv.Client()
	models, err := inventory.ListModels(ctx, client, srv.URL+"/v1", "sk-1", time.Second)
	if err != nil || strings.Join(models, ",") != "a,b" {
		t.Fatalf("%v %v", models, err)
	}
	if _, err := inventory.ProbeModel(ctx, client, srv.URL, "sk-1", "c", time.Second); err == nil || !strings.Contains(err.Error(), `does not serve model "c"`) {
		t.Fatalf("missing model: %v", err)
	}
	for name, endpoint := range map[string]string{"wrong key": srv.URL + "/v1", "not a list": srv.URL + "/html/v1",
		"too big": srv.URL + "/big/v1", "404": srv.URL + "/nothing", "closed port": "http://127.0.0.1:1/v1"} {
		key := "sk-wrong"
		_, err := inventory.ListModels(ctx, client, endpoint, key, time.Second)
		var pe *inventory.ProbeError
		if !errors.As(err, &pe) || !strings.HasPrefix(pe.Reason, "unreachable: GET ") || strings.Contains(pe.Reason, key) ||
			!strings.Contains(pe.Reason, "with this key") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Without a key the message does not speak of one.
	if _, err := inventory.ListModels(ctx, client, srv.URL+"/v1", "", time.Second); err == nil ||
		!strings.Contains(err.Error(), "without a key") || strings.Contains(err.Error(), "this key") {
		t.Fatalf("no key: %v", err)
	}
	denied := egress.New(egress.Rules{Deny: []egress.Rule{mustRule(t, "127.0.0.0/8")}})
	_, err = inventory.ListModels(ctx, &http.Client{Transport: denied.Transport()}, srv.URL+"/v1", "sk-1", time.Second)
	if err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("denied: %v", err)
	}
}

func mustRule(t *testing.T, s string) egress.Rule {
	t.Helper()
	r, err := egress.ParseRules("", s)
	if err != nil {
		t.Fatal(err)
	}
	return r.Deny[0]
}

func TestValidateEndpoint(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8000/v1", "https://api.example.com/v1"} {
		if err := inventory.ValidateEndpoint("endpoint", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"ftp://h/v1", "http://", "http://u:p@h/v1", "http://h/v1?x=1", "http://h/v1#f", "not a url",
		"http://h/" + strings.Repeat("a", inventory.MaxEndpointLength)} {
		if err := inventory.ValidateEndpoint("endpoint", bad); problem.CodeOf(err) != problem.CodeValidation {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
