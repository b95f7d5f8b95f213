package e2e_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/tests/stacktest"
)

const repoRoot = stacktest.RepoRoot

// buildFunctions compiles the named functions' commands once per test binary.
func buildFunctions(t *testing.T, names []string) string { return stacktest.Build(t, names...) }

type stackOptions struct {
	only    []string
	env     map[string]string
	dataDir string               // default: a new temporary directory
	log     func(string, ...any) // default: t.Logf
	// prometheus starts the stack's Prometheus when prometheus is on PATH, as make run does.
	prometheus bool
}

func startStack(t *testing.T, o stackOptions) *local.Stack {
	t.Helper()
	dataDir := o.dataDir
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	seedGeneratedDatasets(t, dataDir)
	return stacktest.Start(t, stacktest.Options{Only: o.only, Env: o.env, DataDir: dataDir, Log: o.log, Prometheus: o.prometheus})
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, body, err := fetch(url)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, body
}

// fetch GETs url and reads the whole body.
func fetch(url string) (*http.Response, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw), nil
}

func post(t *testing.T, url, contentType, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// metric returns the value of the first exposition line starting with series ("" if absent).
func metric(t *testing.T, baseURL, series string) string {
	t.Helper()
	_, body := get(t, baseURL+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, series+" ") {
			return strings.TrimPrefix(line, series+" ")
		}
	}
	return ""
}
