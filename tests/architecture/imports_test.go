package architecture_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/lensfn/lensfn"

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
	Standard     bool
}

func list(t *testing.T, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func ours(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

// functionOf returns "functions/<name>" for a path inside a function.
func functionOf(rel string) string {
	parts := strings.SplitN(rel, "/", 3)
	if len(parts) >= 2 && parts[0] == "functions" {
		return parts[0] + "/" + parts[1]
	}
	return ""
}

// pureCores are the standard-library-only packages that are compiled into the WASM guests
// and also used natively, so that host and guest share one implementation: the plugin ABI,
// the latency core (the simulator's built-in calculators are the guests' own code), the
// step-cost core (the engine model prices its steps natively with the stepcost guest's own
// code) and the one SplitMix64. Every layer may import them; they import only each other.
// The packages under them (the guests) are not cores: only wasm-modules uses those.
var pureCores = []string{"wasm-modules/abi", "wasm-modules/latency", "wasm-modules/splitmix", "wasm-modules/stepcost"}

func pureCore(rel string) bool {
	for _, c := range pureCores {
		if rel == c {
			return true
		}
	}
	return false
}

// allowedOurs says whether package from (module-relative) may import package to.
func allowedOurs(from, to string) bool {
	switch {
	case under(from, "events"):
		return under(to, "events") // its generator imports the catalogue

	case pureCore(from):
		return pureCore(to)
	case under(from, "wasm-modules"):
		return under(to, "wasm-modules")
	case under(from, "runtime"):
		return under(to, "runtime") || under(to, "events") || pureCore(to)
	case under(from, "functions"):
		return under(to, "runtime") || under(to, "events") || pureCore(to) || functionOf(to) == functionOf(from)
	case under(from, "deploy"):
		return under(to, "deploy") || under(to, "runtime") || under(to, "events")
	case under(from, "tests"):
		return true
	}
	return false
}

func TestLayersImportInOneDirection(t *testing.T) {
	for _, p := range list(t, "./...") {
		from, _ := ours(p.ImportPath)
		for _, imp := range p.Imports {
			to, ok := ours(imp)
			if ok && !allowedOurs(from, to) {
				t.Errorf("%s imports %s: against the layer rules of ARCHITECTURE.md", from, to)
			}
		}
		// Tests may use test helpers, but nothing outside a function and tests/ may reach into it.
		for _, imp := range append(append([]string{}, p.TestImports...), p.XTestImports...) {
			to, ok := ours(imp)
			if ok && under(to, "functions") && functionOf(to) != functionOf(from) && !under(from, "tests") {
				t.Errorf("%s (tests) imports %s: only tests/ may import another function", from, to)
			}
		}
	}
}

// homes gives each third-party module the one package tree allowed to import it directly.
var homes = map[string][]string{
	"github.com/gomodule/redigo":       {"runtime/state/redisstore"},
	"github.com/alicebob/miniredis/v2": {"runtime/state/redisstore"},
	"github.com/tetratelabs/wazero":    {"runtime/wasmhost"},
	"github.com/valyala/fasthttp":      {"functions/inferencesim", "functions/inferencerouter"}, // the two data-plane servers: the simulator, and the router in front of it (its package doc argues why)
	// The simulator's optional real tokenizer: a pure-Go Hugging Face tokenizer.json loader.
	"github.com/sugarme/tokenizer": {"functions/inferencesim"},
	// The simulator logs through klog (its flags are the specification's), from log/slog by logr's handler.
	"k8s.io/klog/v2":                      {"functions/inferencesim"},
	"github.com/go-logr/logr":             {"functions/inferencesim"},
	"github.com/go-zeromq/zmq4":           {"functions/inferencesim", "functions/inferencerouter"}, // the KV events: the simulator publishes, the precise-prefix router subscribes
	"github.com/ncruces/go-sqlite3":       {"functions/inferencesim"},
	"github.com/cloudevents/sdk-go/v2":    {"runtime/cloudevent"},
	"knative.dev/pkg":                     {"runtime/fn", "runtime/knativeadmission"},
	"github.com/parquet-go/parquet-go":    {"wasm-modules/tracefmt/baseten"},
	"github.com/prometheus/client_golang": {"runtime/fn", "runtime/leasedrun", "functions"}, // leasedrun: the job metrics of every pool's stage
	// Mergeable quantile sketches for the benchmark runs' live summaries.
	"github.com/DataDog/sketches-go": {"runtime/livesummary"},
	"github.com/openai/openai-go/v3": {}, // tests only
	// The console's browser tests drive headless Chromium (tests/console only).
	"github.com/chromedp/chromedp": {},
	"github.com/chromedp/cdproto":  {},
	// lensctl's progress is tested in pseudo-terminals (tests/lensctl only).
	"github.com/creack/pty": {},
	"gopkg.in/yaml.v3":      {"deploy", "functions/inferencesim", "runtime/evalrun"},
	"golang.org/x/sync":     {"functions", "runtime"},
	"go.uber.org/zap":       {"runtime/fn"},
	// The one environment reader: fn.Config.ReadSettings, which functions call for their own settings.
	"github.com/caarlos0/env/v11":        {"runtime/fn"},
	"github.com/blendle/zapdriver":       {"runtime/fn"}, // Knative's Stackdriver-style zap defaults, without knative.dev/pkg/logging's k8s tree
	"github.com/prometheus/client_model": {"functions", "runtime", "tests"},
	"github.com/prometheus/common":       {"functions", "runtime", "tests"},
	"github.com/google/uuid":             {"runtime", "functions"},
	// lensctl, the command-line client, is the only place with a CLI, tables and progress bars.
	"github.com/spf13/cobra":            {"deploy/lensctl"},
	"github.com/jedib0t/go-pretty/v6":   {"deploy/lensctl"},
	"github.com/schollz/progressbar/v3": {"deploy/lensctl"},
	"golang.org/x/term":                 {"deploy/lensctl"}, // the terminal's width, for progress and tables
	// The deployer's knative provider (its own package, so that the local stack's deployer
	// build links none of this) creates Knative Services with client-go's dynamic client.
	"k8s.io/client-go":    {"functions/deployer/knative"},
	"k8s.io/apimachinery": {"functions/deployer/knative", "runtime/knativeadmission"},
	// Knative's own admission code (Serving's SetDefaults/Validate, the CRD schemas), which the
	// deployer's knative provider runs on what it creates and tests/knative on every manifest.
	"knative.dev/serving": {"runtime/knativeadmission"},
	// core/v1 also in the knative provider: the pods, nodes and events of its cluster evidence
	// are read as their typed objects (Knative Serving's types link core/v1 into it already).
	"k8s.io/api": {"runtime/knativeadmission", "functions/deployer/knative"},
	// runtime/kubeconfig reads kubeconfigs with the YAML-to-JSON conversion client-go's loader uses.
	"sigs.k8s.io/yaml":                         {"runtime/knativeadmission", "runtime/kubeconfig"},
	"github.com/santhosh-tekuri/jsonschema/v6": {"runtime/knativeadmission"},
	"golang.org/x/text":                        {"runtime/knativeadmission"},
	// Student's t quantiles for the comparisons' Welch intervals.
	"gonum.org/v1/gonum": {"runtime/comparison"},
}

// knativeAllowed are the only knative.dev/pkg packages a function may use (the rest pull in
// client-go or OpenCensus).
var knativeAllowed = map[string]bool{
	"knative.dev/pkg/signals": true, "knative.dev/pkg/network": true,
	"knative.dev/pkg/network/handlers": true,
}

// knativeAdmissionAllowed are the knative.dev/pkg packages the admission check uses besides:
// the webhook's field errors and its strict decoder.
var knativeAdmissionAllowed = map[string]bool{"knative.dev/pkg/apis": true, "knative.dev/pkg/webhook/json": true}

func moduleOf(imp string) (string, bool) {
	for m := range homes {
		if imp == m || strings.HasPrefix(imp, m+"/") {
			return m, true
		}
	}
	return "", false
}

func TestEachDependencyHasOneHome(t *testing.T) {
	for _, p := range list(t, "./...") {
		from, _ := ours(p.ImportPath)
		check := func(imp string, test bool) {
			if _, ours := ours(imp); ours || !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				return // our own packages and the standard library
			}
			m, known := moduleOf(imp)
			if !known {
				t.Errorf("%s imports %s: a third-party module with no home in this test (add it deliberately)", from, imp)
				return
			}
			if strings.HasPrefix(imp, "knative.dev/pkg") && !knativeAllowed[imp] &&
				!(under(from, "runtime/knativeadmission") && knativeAdmissionAllowed[imp]) {
				t.Errorf("%s imports %s: only signals, network and network/handlers of knative.dev/pkg are allowed", from, imp)
			}
			if test && (m == "github.com/openai/openai-go/v3" || under(from, "tests")) {
				return
			}
			for _, home := range homes[m] {
				if under(from, home) {
					return
				}
			}
			t.Errorf("%s imports %s: %s lives only in %v", from, imp, m, homes[m])
		}
		for _, imp := range p.Imports {
			check(imp, false)
		}
		for _, imp := range append(append([]string{}, p.TestImports...), p.XTestImports...) {
			check(imp, true)
		}
	}
}

// TestFunctionsStayLight keeps client-go and OpenCensus out of every function binary, as
// knative's depcheck does for its data-plane packages. The deployer is the one control-plane
// function: talking to a cluster is its job, so client-go is allowed in the Knative image's
// build (OpenCensus is not). The local stack's deployer build has the local provider only and
// must link nothing of the knative provider's trees (#11: they were a third of a cold build).
func TestFunctionsStayLight(t *testing.T) {
	for _, p := range list(t, "-deps=false", "./functions/...", "./deploy/local/cmd/...") {
		if !strings.Contains(p.ImportPath, "/cmd/") {
			continue
		}
		// k8s.io/api: knative.dev/pkg/logging reached core/v1 from every function (#11); the
		// runtime now configures zap itself.
		heavy := []string{"k8s.io/client-go", "k8s.io/api/", "go.opencensus.io", "contrib.go.opencensus.io"}
		switch {
		case strings.HasSuffix(p.ImportPath, "/functions/deployer/cmd/deployer"):
			heavy = heavy[2:]
		case strings.HasSuffix(p.ImportPath, "/functions/deployer/cmd/deployer-local"):
			heavy = append(heavy, module+"/functions/deployer/knative", module+"/runtime/knativeadmission",
				"knative.dev/serving", "github.com/santhosh-tekuri/jsonschema", "k8s.io/api/apps", "k8s.io/api/batch")
		}
		deps := list(t, "-deps", p.ImportPath)
		for _, d := range deps {
			for _, h := range heavy {
				if strings.HasPrefix(d.ImportPath, h) {
					t.Errorf("%s depends on %s", p.ImportPath, d.ImportPath)
				}
			}
		}
	}
}
