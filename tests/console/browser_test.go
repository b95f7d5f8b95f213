package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
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
	// The deployer's local provider starts an evaluation's simulators and routers as child
	// processes from the stack's bin dir, reachable on loopback.
	t.Setenv("POD_IP", "127.0.0.1")
	stacktest.Build(t, "inference-router")
	stack := stacktest.Start(t, stacktest.Options{Auth: "required",
		Only: []string{"console", "simulation-api", "trace-replayer", "result-analyzer", "inference-sim", "evaluation-api", "inventory-api", "benchmark-runner",
			"deployer", "workflow-orchestrator"},
		Env: map[string]string{"LENS_LEASE_TTL": "3s", "LENS_SWEEP_INTERVAL": "500ms", "LENS_DEPLOY_TIMEOUT": "60s"}})
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
	if update {
		if err := os.MkdirAll(filepath.Join(stacktest.RepoRoot, "docs", "screenshots"), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 900))...)
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
	// shot looks at the page at each screenshot width: no text of a chart may overlap another,
	// and the full page (cut at maxScreenshotHeight) is kept as a small PNG, in the artifacts
	// and, with LENS_UPDATE_SCREENSHOTS=1, in docs/screenshots as <name>-<width>.png.
	shot := func(name string) {
		t.Helper()
		for _, w := range screenshotWidths {
			step := fmt.Sprintf("screenshot %s at %d px", name, w)
			check(step, chromedp.Do(ctx, chromedp.EmulateViewport(w, 900)))
			time.Sleep(150 * time.Millisecond) // the layout settles after the resize
			// A refreshing page may be replaced under the script: it is run again. A report is
			// sandboxed: no script runs in it (the browser logs one as an error), so its charts
			// are left to runtime/report's tests.
			var overlaps string
			var err error
			if !strings.HasSuffix(name, "-report") {
				overlaps, err = chromedp.Run(ctx, chromedp.Evaluate[string](overlapScript))
			}
			for try := 0; err != nil && try < 5; try++ {
				time.Sleep(300 * time.Millisecond)
				overlaps, err = chromedp.Run(ctx, chromedp.Evaluate[string](overlapScript))
			}
			check(step, err)
			if overlaps != "" {
				t.Errorf("%s: chart texts overlap:\n%s", step, overlaps)
			}
			raw, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			check(step, err)
			small, err := smallPNG(raw)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			file := fmt.Sprintf("%s-%d.png", name, w)
			if err := os.WriteFile(filepath.Join(artifacts, file), small, 0o644); err != nil {
				t.Fatal(err)
			}
			if update {
				if err := os.WriteFile(filepath.Join(stacktest.RepoRoot, "docs", "screenshots", file), small, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		check("back to the wide viewport", chromedp.Do(ctx, chromedp.EmulateViewport(screenshotWidths[0], 900)))
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
	shot("login")
	do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")), visible(`a[href="/tasks/new"]`))
	if h := text("title", "h1"); h != "Simulation tasks" || !strings.HasSuffix(location(), "/tasks") {
		t.Fatalf("after sign-in: %q at %s", h, location())
	}
	do("overview", chromedp.Navigate(base+"/"), visible("section.card"))
	if page := html(); strings.Contains(page, `class="problem"`) || strings.Contains(page, token) {
		t.Fatalf("the overview shows a problem or the token:\n%s", page)
	}
	do("datasets", chromedp.Navigate(base+"/datasets"), visible(`a[href="/datasets/lensfn-sample-chat"]`))
	shot("datasets")
	do("timeline", chromedp.Navigate(base+"/datasets/lensfn-sample-chat"), visible("#timeline svg"))
	shot("dataset-timeline")

	// The API's validation, shown next to the field.
	do("task form with a bad endpoint", chromedp.Navigate(base+"/tasks/new"), visible("#task-form"),
		chromedp.SendKeys(chromedp.CSS("#endpoint_url"), "not a url"), chromedp.SendKeys(chromedp.CSS("#model_name"), model),
		chromedp.SetValue(chromedp.CSS("#trace_dataset"), "lensfn-sample-chat"),
		chromedp.Submit(chromedp.CSS("#task-form")), visible(".field-error"))
	if msg := text("field error", ".field-error"); msg == "" {
		t.Fatal("the form shows an empty field error")
	}
	shot("task-form-errors")
	do("create a task", chromedp.SetValue(chromedp.CSS("#endpoint_url"), simURL), chromedp.SetValue(chromedp.CSS("#scale_factor"), "10"),
		chromedp.SetValue(chromedp.CSS("#duration_seconds"), "10"), chromedp.Submit(chromedp.CSS("#task-form")), visible("#task"))
	taskURL := location()
	first, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#task"), "data-status"))
	check("first status", err)
	shot("task-live")
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
	shot("task-results")
	do("open the report", chromedp.Navigate(taskURL+"/report"), visible("svg"))
	shot("task-report")

	do("rerun", chromedp.Navigate(taskURL), visible("#rerun"), chromedp.Click(chromedp.CSS("#rerun")))
	rerunURL := leftPage("rerun", taskURL)
	do("watch the rerun finish", visible("#task"), visible("#report"))
	a, b := filepath.Base(taskURL), filepath.Base(rerunURL)
	do("compare", chromedp.Navigate(base+"/compare?a="+a+"&b="+b), visible("#comparison"))
	shot("compare")

	do("benchmark runs", chromedp.Navigate(base+"/runs"), visible("main table"))
	shot("runs")
	do("benchmark run form", chromedp.Navigate(base+"/runs/new"), visible("#spec"), chromedp.Submit(chromedp.CSS("#spec")), visible("div.problem"))
	shot("run-form-errors")
	// Six seconds of traffic at a fixed rate: long enough for the live summary to show.
	spec := `{"deployment_execution_id":"` + execID + `","cluster_session_id":"` + stack.LocalSessionID + `",
  "shared_prefix":{"num_groups":2,"num_prompts_per_group":15,"system_prompt_len":32,"question_len":8,"output_len":8,"stages":[{"rate":5,"duration":6}]},
  "sla_targets":{"ttft_ms":2000,"tpot_ms":200,"success_rate_min_percent":99}}`
	do("create a benchmark run", chromedp.Navigate(base+"/runs/new"), visible("#spec"), chromedp.SetValue(chromedp.CSS("#spec"), spec),
		chromedp.Submit(chromedp.CSS("#spec")))
	leftPage("create a benchmark run", base+"/runs/new")
	// The run page follows the run's event stream: the live summary fills in while it sends.
	do("the live summary", visible("#live-metrics"), chromedp.Poll[chromedp.Void](`(document.querySelector('[data-live="summary.ttft_ms.p50"]')?.textContent.trim() || "") !== "" && `+
		`(document.querySelector('[data-live="summary.throughput.requests_per_second"]')?.textContent.trim() || "") !== ""`))
	for _, sel := range []chromedp.CSS{"#live-ttft", "#live-tpot", "#live-latency", "#live-rps", "#live-tps"} {
		if v := text("live summary", sel); !regexp.MustCompile(`^[0-9.]+ / [0-9.]+`).MatchString(v) {
			t.Fatalf("live %s shows %q", sel, v)
		}
	}
	shot("benchmark-run-live")
	// The stream's end reloads the page with the final metrics.
	do("watch the benchmark run", visible("#metrics"))
	if st := text("run status", "#run-status"); st != "succeeded" {
		t.Fatalf("the benchmark run ended %q", st)
	}
	// The run's report: the verdict and its margins first, then the tiles, the percentiles and
	// the charts; the HTML report linked; the raw JSON closed behind its disclosure.
	runURL := location()
	if v := text("the run's verdict", "#verdict .verdict-line"); !strings.HasPrefix(v, "SLA met") && !strings.HasPrefix(v, "SLA missed") {
		t.Fatalf("the run's verdict reads %q", v)
	}
	for _, sel := range []string{`#sla tr[data-check="ttft"]`, `#sla tr[data-check="tpot"]`, `#sla tr[data-check="success_rate"]`,
		`#metrics .tile[data-metric="throughput_tps"]`, `#percentiles tr[data-distribution="ttft"]`, "figure.chart svg", "#report-link"} {
		do("the run's report shows "+sel, visible(sel))
	}
	if order, err := chromedp.Run(ctx, chromedp.Evaluate[string](`["#verdict","#metrics","#percentiles","#raw"].map((s) => document.querySelector(s).getBoundingClientRect().top).join(" ")`)); err != nil ||
		!ascending(order) {
		t.Fatalf("the run page is not verdict, tiles, percentiles, then raw JSON: %q %v", order, err)
	}
	if open, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("details#raw").open`)); err != nil || open {
		t.Fatalf("the raw JSON is not behind a closed disclosure (%v)", err)
	}
	shot("benchmark-run")
	// Opened by its address, as the others: the sandboxed report runs no script, the test's own
	// (reading the location) included.
	if page := html(); !strings.Contains(page, `href="/runs/`+path.Base(runURL)+`/report"`) {
		t.Fatalf("the run page has no report link:\n%s", page)
	}
	do("the run's HTML report", chromedp.Navigate(runURL+"/report"), visible("svg"))
	shot("benchmark-run-report")
	do("evaluations", chromedp.Navigate(base+"/evaluations"), visible("main h1"))
	shot("evaluations")
	evaluations(t, evaluationSteps{base: base, token: token, session: stack.LocalSessionID, do: do, text: text, location: location,
		leftPage: leftPage, shot: shot, html: html, eval: func(script string) (string, error) {
			return chromedp.Run(ctx, chromedp.Evaluate[string](script))
		}})
	do("inventory", chromedp.Navigate(base+"/inventory"), visible("main table"))
	shot("inventory")
	// The overview lists the runs and evaluations just made, with their verdicts.
	do("overview", chromedp.Navigate(base+"/"), visible("#recent-runs tr[data-run]"), visible("#recent-evaluations tr[data-evaluation]"))
	if page := html(); strings.Contains(page, `class="problem"`) || strings.Contains(page, token) || !strings.Contains(page, `">met</span>`) && !strings.Contains(page, `">missed</span>`) {
		t.Fatalf("the overview shows a problem or the token, or no verdict:\n%s", page)
	}
	shot("overview")

	do("delete the rerun", chromedp.Navigate(rerunURL), visible("#delete"))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.confirm = () => true; true`))
	check("accept the confirmation", err)
	do("delete the rerun", chromedp.Click(chromedp.CSS("#delete")))
	leftPage("delete the rerun", rerunURL)
	do("delete the rerun", visible(`a[href="/tasks/new"]`))
	if page := html(); strings.Contains(page, `href="/tasks/`+b+`"`) || !strings.Contains(page, `href="/tasks/`+a+`"`) {
		t.Fatalf("after deleting %s the list is wrong:\n%s", b, page)
	}
	// The page is read before the click: read after it, it can already be the login page,
	// which the browser then never leaves.
	signedIn := location()
	do("sign out", chromedp.Click(chromedp.CSS(".who button")))
	if at := leftPage("sign out", signedIn); !strings.HasSuffix(at, "/login") {
		t.Fatalf("signed out to %s", at)
	}
	do("sign out", visible("#token"))
}

// evaluationSteps are the browser helpers the evaluation walk uses.
type evaluationSteps struct {
	base, token, session string
	do                   func(step string, steps ...chromedp.Action[chromedp.Void])
	text                 func(step string, sel chromedp.CSS) string
	location, html       func() string
	leftPage             func(step, from string) string
	shot                 func(name string)
	// eval evaluates a script in the page; it fails while the page is being replaced.
	eval func(script string) (string, error)
}

// A plan's tiny workload on the simulators' local deployments (8 requests at 4 per second) and
// its SLA targets.
const evalWorkload = `"benchmark":{"shared_prefix":{"num_groups":2,"num_prompts_per_group":4,"system_prompt_len":64,"question_len":8,"output_len":4,` +
	`"stages":[{"rate":4,"duration":2}]}},"sla_targets":{"ttft_ms":5000,"success_rate_min_percent":90}`

// evaluations drives the real evaluation flow through the stack from the console: a guide
// configuration against its direct-vllm baseline (two configurations, each deployed by the
// deployer's local provider), created from the console's form, watched until its comparison and
// SLA verdict show, its report opened; then a second evaluation whose case is cancelled from its
// page and which is retried from there to success.
func evaluations(t *testing.T, s evaluationSteps) {
	t.Helper()
	guide := postJSON(t, s.base+"/api/v1/configurations", s.token, `{"name":"browser guide","schema_version":"deployable-configuration.v1",`+
		`"type":"guide","format":"lensfn","provider_ref":"optimized-baseline","content":{"model":{"name":"sim-model"},"decode":{"replicas":1},`+
		`"router":{"profile":"optimized"},"simulator":{"latency-calculator":"per-token","prefill-time-per-token":"1ms","inter-token-latency":"1ms"}}}`)
	create := func(step, body string) string {
		t.Helper()
		s.do(step, chromedp.Navigate(s.base+"/evaluations/new"), chromedp.WaitVisible(chromedp.CSS("#spec")),
			chromedp.SetValue(chromedp.CSS("#spec"), body), chromedp.Submit(chromedp.CSS("#spec")))
		at := s.leftPage(step, s.base+"/evaluations/new")
		if !regexp.MustCompile(`/evaluations/[^/]+$`).MatchString(at) {
			t.Fatalf("%s: at %s\n%s", step, at, s.html())
		}
		return at
	}
	// statusIs waits, across the page's own refreshes (a read may meet the page being
	// replaced: it is read again), for the evaluation's status.
	statusIs := func(step, want string, timeout time.Duration) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			got, err := s.eval(`document.getElementById("workflow-status")?.textContent.trim() || ""`)
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) || err == nil && want != "cancelled" && (got == "failed" || got == "cancelled") {
				t.Fatalf("%s: the evaluation is %q (%v), want %q\n%s", step, got, err, want, s.html())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// press clicks a button of the refreshing page by script (a node id would not survive a
	// refresh), trying again until the button is there.
	press := func(step, selector string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := s.eval(`(() => { const b = document.querySelector('` + selector + `'); if (!b) return "absent"; b.click(); return "pressed"; })()`)
			if err == nil && got == "pressed" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no %s to press (%s %v)\n%s", step, selector, got, err, s.html())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	started := time.Now()
	// The form's own template, submitted as it stands: it names the newest guide configuration
	// (the one just stored) and the stack's cluster session, and the API accepts it.
	s.do("the new-evaluation form", chromedp.Navigate(s.base+"/evaluations/new"), chromedp.WaitVisible(chromedp.CSS("#spec")))
	template, err := s.eval(`document.getElementById("spec").value`)
	if err != nil || !strings.Contains(template, `"configuration_artifact_id": "`+guide+`"`) || !strings.Contains(template, `"cluster_session_id": "`+s.session+`"`) {
		t.Fatalf("the form's template does not name the guide configuration and the session (%v):\n%s", err, template)
	}
	s.shot("evaluation-form")
	s.do("submit the form as it stands", chromedp.Submit(chromedp.CSS("#spec")))
	first := s.leftPage("submit the form as it stands", s.base+"/evaluations/new")
	if !regexp.MustCompile(`/evaluations/[^/]+$`).MatchString(first) {
		t.Fatalf("the form's template was refused: at %s\n%s", first, s.html())
	}
	// The evaluation started: its page shows it active (or already done), never refused.
	if st := s.text("the evaluation started", "#workflow-status"); st == "" || st == "failed" || st == "cancelled" {
		t.Fatalf("the evaluation from the form's template is %q\n%s", st, s.html())
	}
	s.do("watch the evaluation", chromedp.WaitVisible(chromedp.CSS(`#cases tr[data-case="guide-1"]`)), chromedp.WaitVisible(chromedp.CSS(`#cases tr[data-case="baseline-1"]`)))
	s.shot("evaluation-live")
	statusIs("watch the evaluation", "succeeded", 2*time.Minute)
	s.do("the comparison", chromedp.WaitVisible(chromedp.CSS("section.comparison table")))
	if v := s.text("the SLA verdict", "section.comparison h3"); !strings.Contains(v, "guide-1 vs baseline-1 (direct-vllm)") || !strings.Contains(v, "SLA") {
		t.Fatalf("comparison heading %q", v)
	}
	if page := s.html(); strings.Contains(page, "No matched rows") || strings.Count(page, `class="status s-succeeded"`) < 3 {
		t.Fatalf("the comparison has no rows or a case did not succeed:\n%s", page)
	}
	t.Logf("evaluation of two configurations succeeded in the browser in %s", time.Since(started).Round(100*time.Millisecond))
	// Beside each ratio both sides' numbers, with the intervals; the parity state with its reasons.
	if v := s.text("the parity", "section.comparison p.parity"); !strings.HasPrefix(v, "Parity valid") && !strings.HasPrefix(v, "Parity not valid") {
		t.Fatalf("the parity reads %q", v)
	}
	row := s.text("the TTFT change", `section.comparison table.changes tr[data-metric="ttft_ms"]`)
	if !regexp.MustCompile(`TTFT p50 \(ms\)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+×\s+[0-9.]+× to [0-9.]+×\s+-?[0-9.]+ %\s+-?[0-9.]+ to -?[0-9.]+ %`).MatchString(row) {
		t.Fatalf("the TTFT change row lacks the absolute numbers or the intervals: %q", row)
	}
	s.do("the matched stages", chromedp.WaitVisible(chromedp.CSS("section.comparison table.stages td.ratio")))
	s.shot("evaluation")
	// Opened by its address (as the task's): the sandboxed report runs no script, and the
	// browser logs an error for a script run in it, the test's own included.
	if page := s.html(); !strings.Contains(page, `href="/evaluations/`+path.Base(first)+`/report"`) {
		t.Fatalf("the evaluation page has no report link:\n%s", page)
	}
	s.do("open the evaluation report", chromedp.Navigate(first+"/report"), chromedp.WaitVisible(chromedp.CSS("svg")))
	s.shot("evaluation-report")

	// Cancel the case of a second evaluation from its page, then retry it from there.
	url := create("create an evaluation to cancel", `{"name":"browser cancel","cluster_session_id":"`+s.session+`","benchmark_plans":[{`+
		`"configuration_artifact_id":"`+guide+`","include_baseline":false,`+evalWorkload+`}]}`)
	press("cancel its case", `tr[data-case="guide-1"] button.cancel-case`)
	statusIs("the case cancelled", "cancelled", time.Minute)
	if page := s.html(); strings.Contains(page, `class="problem" role="alert"`) {
		t.Fatalf("the cancel was refused:\n%s", page)
	}
	if v := s.text("the case's status", `tr[data-case="guide-1"] .status`); v != "cancelled" {
		t.Fatalf("the case is %q", v)
	}
	s.shot("evaluation-cancelled")
	// The retry answers with the same page: it has been reloaded once the retry button is gone
	// (the evaluation is queued again) or the API's refusal shows.
	press("retry it", "#retry-workflow")
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.eval(`String(document.readyState === "complete" && (!document.getElementById("retry-workflow") || document.querySelector("div.problem[role=alert]") !== null))`)
		if err == nil && got == "true" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry it: the page did not answer (%s %v)\n%s", got, err, s.html())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if page := s.html(); strings.Contains(page, `class="problem" role="alert"`) {
		t.Fatalf("the retry was refused:\n%s", page)
	}
	statusIs("the retry", "succeeded", 2*time.Minute)
	if v := s.text("the case's status", `tr[data-case="guide-1"] .status`); v != "succeeded" {
		t.Fatalf("after the retry the case is %q", v)
	}
	t.Logf("both evaluations walked in %s", time.Since(started).Round(100*time.Millisecond))
	// The deployer removes a finished case's deployment after it; the stack stops only then, so
	// no simulator or router the evaluations started outlives the test.
	for _, u := range []string{first, url} {
		cleanedUp(t, s.base+"/api/v1/evaluate/workflow-runs/"+path.Base(u), s.token)
	}
}

// cleanedUp waits until every deployment an evaluation's cases made is cleaned up.
func cleanedUp(t *testing.T, workflowURL, token string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest(http.MethodGet, workflowURL, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		var wf struct {
			Cases []map[string]any `json:"cases"`
		}
		pending := -1
		if resp, err := http.DefaultClient.Do(req); err == nil {
			if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&wf) == nil {
				pending = 0
				for _, c := range wf.Cases {
					if c["execution_id"] != nil && c["baseline_type"] != "kubernetes-service" && c["cleanup_status"] != "cleaned" {
						pending++
					}
				}
			}
			resp.Body.Close()
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d deployments not cleaned up after a minute", workflowURL, pending)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ascending says whether space-separated numbers increase.
func ascending(list string) bool {
	var prev float64
	for i, f := range strings.Fields(list) {
		var v float64
		if _, err := fmt.Sscan(f, &v); err != nil || i > 0 && v <= prev {
			return false
		}
		prev = v
	}
	return list != ""
}
