package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/tests/stacktest"
)

// findChromium is the browser to drive: LENS_CHROMIUM, else Debian's chromium on PATH.
func findChromium() string {
	if p := os.Getenv("LENS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// postJSON creates a record through the API with the token and returns its id.
func postJSON(t *testing.T, url, token, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var created struct {
		ID string `json:"id"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &created) != nil || created.ID == "" {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	return created.ID
}

// pageErrors collects what the browser reports as going wrong on a page.
type pageErrors struct {
	mu   sync.Mutex
	list []string
}

func (p *pageErrors) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *pageErrors) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.list
	p.list = nil
	return out
}

// TestConsoleInABrowser walks every page of the console over a real stack with auth on.
func TestConsoleInABrowser(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		t.Skip("browser tests skipped: no chromium on PATH (apt-get install chromium, or set LENS_CHROMIUM)")
	}
	stack := stacktest.Start(t, stacktest.Options{Auth: "required",
		Only: []string{"console", "simulation-api", "trace-replayer", "result-analyzer", "inference-sim", "evaluation-api", "inventory-api", "benchmark-runner"}})
	tokens, closeTokens, err := local.OpenTokens(context.Background(), stack.RedisURL, "")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := tokens.Create(context.Background(), "browser-test", auth.Scopes)
	closeTokens()
	if err != nil {
		t.Fatal(err)
	}
	simURL, model, ok := stack.Simulator()
	if !ok {
		t.Fatal("the stack runs no simulator")
	}
	// The stack's simulator as a deployment execution behind a Model Service, for the benchmark
	// run and the inventory page.
	execID := postJSON(t, stack.APIURL+"/api/v1/deployments/executions", token, `{"cluster_session_id":"`+stack.LocalSessionID+
		`","name":"browser-sim","model":"`+model+`","endpoint":"`+simURL+`"}`)
	postJSON(t, stack.APIURL+"/api/v1/model-services", token, `{"name":"browser","published_name":"`+model+
		`","cluster_session_id":"`+stack.LocalSessionID+`","member_execution_ids":["`+execID+`"]}`)
	artifacts := os.Getenv("LENS_TEST_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(os.TempDir(), "lensfn-console-screenshots")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", artifacts)
	update := os.Getenv("LENS_UPDATE_SCREENSHOTS") == "1"

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900))...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	// Script exceptions, console.error and the browser's own error log (a CSP violation, a
	// failed load) all fail the step they happen in.
	errs := &pageErrors{}
	messages := chromedp.Console(browserCtx) // starts the browser; no timeout on this first call
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				errs.add("%s (%s)", m.String(), m.URL)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(browserCtx, 8*time.Minute)
	defer cancel()

	base := stack.APIURL
	check := func(step string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if e := errs.take(); len(e) > 0 {
			t.Fatalf("%s: the browser reported errors:\n%s", step, strings.Join(e, "\n"))
		}
	}
	do := func(step string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		check(step, chromedp.Do(ctx, steps...))
	}
	text := func(step string, sel chromedp.CSS) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		check(step, err)
		return strings.TrimSpace(v)
	}
	location := func() string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Location())
		check("location", err)
		return v
	}
	html := func() string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
		check("read the page", err)
		return v
	}
	shot := func(name string, main bool) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		check("screenshot "+name, err)
		if err := os.WriteFile(filepath.Join(artifacts, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		if main && update {
			if err := os.WriteFile(filepath.Join(stacktest.RepoRoot, "docs", "screenshots", name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// leftPage waits until a click has taken the browser off the page at from.
	leftPage := func(step, from string) string {
		t.Helper()
		for ctx.Err() == nil {
			if at := location(); at != from {
				return at
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: the browser stayed on %s", step, from)
		return ""
	}
	// frameShows waits for the report's charts inside its frame: a sandboxed frame is a target
	// of its own, so it is attached to, and its console is watched like the page's.
	frameShows := func(frameURL string) {
		t.Helper()
		targets, err := chromedp.Targets(ctx)
		check("list the frames", err)
		for _, tg := range targets {
			if tg.Type != "iframe" || tg.URL != frameURL {
				continue
			}
			// Cancelling an attached frame's context leaves the page's own target unusable
			// (seen with chromedp v0.23.0), so the frame stays attached until the browser goes.
			frame, _ := chromedp.NewContext(ctx, chromedp.WithTargetID(tg.TargetID))

			var frameErrs []string
			var mu sync.Mutex
			go func() {
				for m, err := range chromedp.Console(frame) {
					if err != nil {
						return
					}
					if m.Type == chromedp.ConsoleError || m.IsException() {
						mu.Lock()
						frameErrs = append(frameErrs, m.String())
						mu.Unlock()
					}
				}
			}()
			check("the report's charts in its frame", chromedp.Do(frame, chromedp.WaitVisible(chromedp.CSS("svg"))))
			mu.Lock()
			defer mu.Unlock()
			if len(frameErrs) > 0 {
				t.Fatalf("the report frame reported errors:\n%s", strings.Join(frameErrs, "\n"))
			}
			return
		}
		t.Fatalf("no frame shows %s", frameURL)
	}
	visible := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.WaitVisible(chromedp.CSS(sel)) }

	do("sign in", chromedp.Navigate(base+"/tasks"), visible("#token"))
	shot("login", false)
	do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")), visible(`a[href="/tasks/new"]`))
	if h := text("title", "h1"); h != "Simulation tasks" || !strings.HasSuffix(location(), "/tasks") {
		t.Fatalf("after sign-in: %q at %s", h, location())
	}
	do("overview", chromedp.Navigate(base+"/"), visible("section.card"))
	if page := html(); strings.Contains(page, `class="problem"`) || strings.Contains(page, token) {
		t.Fatalf("the overview shows a problem or the token:\n%s", page)
	}
	shot("overview", true)
	do("datasets", chromedp.Navigate(base+"/datasets"), visible(`a[href="/datasets/lensfn-sample-chat"]`))
	shot("datasets", false)
	do("timeline", chromedp.Navigate(base+"/datasets/lensfn-sample-chat"), visible("#timeline svg"))
	shot("dataset-timeline", true)

	// The API's validation, shown next to the field.
	do("task form with a bad endpoint", chromedp.Navigate(base+"/tasks/new"), visible("#task-form"),
		chromedp.SendKeys(chromedp.CSS("#endpoint_url"), "not a url"), chromedp.SendKeys(chromedp.CSS("#model_name"), model),
		chromedp.SetValue(chromedp.CSS("#trace_dataset"), "lensfn-sample-chat"),
		chromedp.Submit(chromedp.CSS("#task-form")), visible(".field-error"))
	if msg := text("field error", ".field-error"); msg == "" {
		t.Fatal("the form shows an empty field error")
	}
	shot("task-form-errors", false)
	do("create a task", chromedp.SetValue(chromedp.CSS("#endpoint_url"), simURL), chromedp.SetValue(chromedp.CSS("#scale_factor"), "10"),
		chromedp.SetValue(chromedp.CSS("#duration_seconds"), "10"), chromedp.Submit(chromedp.CSS("#task-form")), visible("#task"))
	taskURL := location()
	first, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#task"), "data-status"))
	check("first status", err)
	shot("task-live", true)
	if !regexp.MustCompile(`/tasks/[^/]+$`).MatchString(taskURL) {
		t.Fatalf("created task page at %s", taskURL)
	}
	// The page has no refresh of its own: the report appears when the event stream's "end"
	// reloads it.
	do("watch it finish", visible("#report[data-loaded]"))
	frameShows(taskURL + "/report")
	if st := text("status", "#status"); st != "completed" {
		t.Fatalf("the task ended %q", st)
	}
	t.Logf("the task page first rendered %q, then followed the task live to the end", first.Value)
	shot("task-results", true)
	do("open the report", chromedp.Navigate(taskURL+"/report"), visible("svg"))
	shot("task-report", true)

	do("rerun", chromedp.Navigate(taskURL), visible("#rerun"), chromedp.Click(chromedp.CSS("#rerun")))
	rerunURL := leftPage("rerun", taskURL)
	do("watch the rerun finish", visible("#task"), visible("#report"))
	a, b := filepath.Base(taskURL), filepath.Base(rerunURL)
	do("compare", chromedp.Navigate(base+"/compare?a="+a+"&b="+b), visible("#comparison"))
	shot("compare", true)

	do("benchmark runs", chromedp.Navigate(base+"/runs"), visible("main table"))
	shot("runs", false)
	do("benchmark run form", chromedp.Navigate(base+"/runs/new"), visible("#spec"), chromedp.Submit(chromedp.CSS("#spec")), visible("div.problem"))
	shot("run-form-errors", false)
	spec := `{"deployment_execution_id":"` + execID + `","cluster_session_id":"` + stack.LocalSessionID + `",
  "matrix":[{"isl":64,"osl":16}],"concurrency_stages":[{"concurrency":2,"num_requests":8}],"warmup_requests":1,
  "sla_targets":{"ttft_ms":2000,"tpot_ms":200,"success_rate_min_percent":99}}`
	do("create a benchmark run", chromedp.Navigate(base+"/runs/new"), visible("#spec"), chromedp.SetValue(chromedp.CSS("#spec"), spec),
		chromedp.Submit(chromedp.CSS("#spec")))
	leftPage("create a benchmark run", base+"/runs/new")
	// The run page refreshes itself until the run is final; its metrics appear then.
	do("watch the benchmark run", visible("#metrics"))
	if st := text("run status", "#run-status"); st != "succeeded" {
		t.Fatalf("the benchmark run ended %q", st)
	}
	shot("benchmark-run", true)
	do("evaluations", chromedp.Navigate(base+"/evaluations"), visible("main h1"))
	shot("evaluations", true)
	do("inventory", chromedp.Navigate(base+"/inventory"), visible("main table"))
	shot("inventory", false)

	do("delete the rerun", chromedp.Navigate(rerunURL), visible("#delete"))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.confirm = () => true; true`))
	check("accept the confirmation", err)
	do("delete the rerun", chromedp.Click(chromedp.CSS("#delete")))
	leftPage("delete the rerun", rerunURL)
	do("delete the rerun", visible(`a[href="/tasks/new"]`))
	if page := html(); strings.Contains(page, `href="/tasks/`+b+`"`) || !strings.Contains(page, `href="/tasks/`+a+`"`) {
		t.Fatalf("after deleting %s the list is wrong:\n%s", b, page)
	}
	do("sign out", chromedp.Click(chromedp.CSS(".who button")))
	if at := leftPage("sign out", location()); !strings.HasSuffix(at, "/login") {
		t.Fatalf("signed out to %s", at)
	}
	do("sign out", visible("#token"))
}
