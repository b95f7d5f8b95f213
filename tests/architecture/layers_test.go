package architecture_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runtimeLayer is a layer of runtime/ (ARCHITECTURE.md, "Layers inside runtime/"). A package
// imports packages of its own layer and of layers of a lower rank; the two layers of one rank
// (platform and engine) do not import each other.
type runtimeLayer struct {
	name string
	rank int
}

var (
	// leafLayer is the libraries that import nothing of runtime/ but each other: errors,
	// redaction, JSON, sockets, the endpoint policy, kubeconfig and Knative checks, test helpers.
	leafLayer = runtimeLayer{"leaf libraries", 0}
	// platformLayer is what a function runs on: the function contract, the store and its
	// leases, auth, CloudEvents, Server-Sent Events, the claim loop.
	platformLayer = runtimeLayer{"platform", 1}
	// engineLayer is what does the work: the load engine and its summaries, the engine model,
	// the WebAssembly host, the trace spool.
	engineLayer = runtimeLayer{"engine", 1}
	// recordsLayer is the records and what is made of them: tasks, runs, workflows, the
	// inventory, comparisons, workloads and predictions, the reports.
	recordsLayer = runtimeLayer{"records", 2}
)

// runtimeLayers places every package under runtime/ in its layer. A new package is placed here
// (and in ARCHITECTURE.md) deliberately: TestRuntimeLayers fails until it is.
var runtimeLayers = map[string]runtimeLayer{
	"runtime/apiclient":                  leafLayer,
	"runtime/conntest":                   leafLayer,
	"runtime/egress":                     leafLayer,
	"runtime/jsoncursor":                 leafLayer,
	"runtime/jsonstr":                    leafLayer,
	"runtime/knativeadmission":           leafLayer,
	"runtime/kubeconfig":                 leafLayer,
	"runtime/kubeconfig/kubeconfigtest":  leafLayer,
	"runtime/kvblock":                    leafLayer,
	"runtime/livesummary":                leafLayer,
	"runtime/openapi":                    leafLayer,
	"runtime/problem":                    leafLayer,
	"runtime/promtargets":                leafLayer,
	"runtime/rawjson":                    leafLayer,
	"runtime/secret":                     leafLayer,
	"runtime/sockpeek":                   leafLayer,
	"runtime/timingtest":                 leafLayer,
	"runtime/apiroute":                   platformLayer,
	"runtime/auth":                       platformLayer,
	"runtime/cloudevent":                 platformLayer,
	"runtime/fn":                         platformLayer,
	"runtime/fn/fntest":                  platformLayer,
	"runtime/leasedrun":                  platformLayer,
	"runtime/sse":                        platformLayer,
	"runtime/sse/ssetest":                platformLayer,
	"runtime/state":                      platformLayer,
	"runtime/state/redisstore":           platformLayer,
	"runtime/state/redisstore/redistest": platformLayer,
	"runtime/state/statetest":            platformLayer,
	"runtime/analysis":                   engineLayer,
	"runtime/enginemodel":                engineLayer,
	"runtime/loadgen":                    engineLayer,
	"runtime/loadgen/internal/h1":        engineLayer,
	"runtime/tracespool":                 engineLayer,
	"runtime/wasmhost":                   engineLayer,
	"runtime/wasmhost/wasmtest":          engineLayer,
	"runtime/comparison":                 recordsLayer,
	"runtime/deployconfig":               recordsLayer,
	"runtime/evalrun":                    recordsLayer,
	"runtime/inventory":                  recordsLayer,
	"runtime/predict":                    recordsLayer,
	"runtime/recordrepo":                 recordsLayer,
	"runtime/report":                     recordsLayer,
	"runtime/report/comparisonreport":    recordsLayer,
	"runtime/report/recordcsv":           recordsLayer,
	"runtime/report/runreport":           recordsLayer,
	"runtime/report/simreport":           recordsLayer,
	"runtime/simtask":                    recordsLayer,
	"runtime/workflow":                   recordsLayer,
	"runtime/workload":                   recordsLayer,
}

const layersHome = "runtimeLayers in tests/architecture/layers_test.go"

// runtimeImportProblem says what is wrong with runtime package from importing runtime package
// to under layers ("" when the import is allowed).
func runtimeImportProblem(layers map[string]runtimeLayer, from, to string) string {
	lf, okFrom := layers[from]
	lt, okTo := layers[to]
	switch {
	case !okFrom || !okTo:
		return "" // checkRuntimeLayers reports the package in no layer once
	case lt.rank > lf.rank:
		return fmt.Sprintf("%s (%s) imports %s (%s): a back-arrow, a lower layer of runtime/ importing a higher one", from, lf.name, to, lt.name)
	case lt.rank == lf.rank && lt.name != lf.name:
		return fmt.Sprintf("%s (%s) imports %s (%s): the %s and %s layers of runtime/ do not import each other", from, lf.name, to, lt.name, lf.name, lt.name)
	}
	return ""
}

// checkRuntimeLayers returns what is wrong with the runtime packages pkgs (their imports, not
// their tests') under layers: a package in no layer, a layer entry with no package, an import
// against the layers.
func checkRuntimeLayers(layers map[string]runtimeLayer, pkgs []pkg) []string {
	var problems []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		from, ok := ours(p.ImportPath)
		if !ok || !under(from, "runtime") {
			continue
		}
		seen[from] = true
		if _, placed := layers[from]; !placed {
			problems = append(problems, fmt.Sprintf("%s is in no layer of runtime/: add it to %s (and to ARCHITECTURE.md's layers of runtime/)", from, layersHome))
			continue
		}
		for _, imp := range p.Imports {
			if to, ok := ours(imp); ok && under(to, "runtime") {
				if problem := runtimeImportProblem(layers, from, to); problem != "" {
					problems = append(problems, problem)
				}
			}
		}
	}
	for name := range layers {
		if !seen[name] {
			problems = append(problems, fmt.Sprintf("%s is no package (any more): remove it from %s", name, layersHome))
		}
	}
	slices.Sort(problems)
	return problems
}

// TestRuntimeLayers: inside runtime/, records sit above the platform and the engine, which sit
// side by side above the leaf libraries; every package is placed, and none imports upwards or
// sideways.
func TestRuntimeLayers(t *testing.T) {
	for _, problem := range checkRuntimeLayers(runtimeLayers, list(t, "./runtime/...")) {
		t.Error(problem)
	}
}

// The checker itself: a back-arrow, a sideways import and an unplaced package fail it; imports
// down or within a layer pass.
func TestRuntimeLayerCheckerCatchesBackArrows(t *testing.T) {
	layers := map[string]runtimeLayer{
		"runtime/leaf": leafLayer, "runtime/leaf2": leafLayer, "runtime/store": platformLayer,
		"runtime/engine": engineLayer, "runtime/record": recordsLayer, "runtime/gone": leafLayer,
	}
	imports := func(from string, to ...string) pkg {
		p := pkg{ImportPath: module + "/" + from}
		for _, dep := range to {
			p.Imports = append(p.Imports, module+"/"+dep)
		}
		return p
	}
	pkgs := []pkg{
		imports("runtime/leaf", "runtime/leaf2"),                                     // within a layer: allowed
		imports("runtime/leaf2", "runtime/record"),                                   // a back-arrow
		imports("runtime/store", "runtime/leaf", "runtime/engine"),                   // down, and sideways
		imports("runtime/engine", "runtime/leaf"),                                    // down
		imports("runtime/record", "runtime/store", "runtime/engine", "runtime/leaf"), // down
		imports("runtime/new", "runtime/leaf"),                                       // in no layer
	}
	got := checkRuntimeLayers(layers, pkgs)
	want := []string{
		"runtime/gone is no package (any more): remove it from " + layersHome,
		"runtime/leaf2 (leaf libraries) imports runtime/record (records): a back-arrow, a lower layer of runtime/ importing a higher one",
		"runtime/new is in no layer of runtime/: add it to " + layersHome + " (and to ARCHITECTURE.md's layers of runtime/)",
		"runtime/store (platform) imports runtime/engine (engine): the platform and engine layers of runtime/ do not import each other",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The real table places every runtime package it names in one of the four layers.
	for name, l := range runtimeLayers {
		if !slices.Contains([]runtimeLayer{leafLayer, platformLayer, engineLayer, recordsLayer}, l) {
			t.Errorf("%s is in an unnamed layer %+v", name, l)
		}
	}
}

// layerRow is a row of ARCHITECTURE.md's table of the layers of runtime/: its layer and its
// packages cell.
var layerRow = regexp.MustCompile(`(?m)^\| (records|platform|engine|leaf libraries) \| ([^|]+) \|`)

// mdLayers reads the packages ARCHITECTURE.md places in each layer of runtime/: a name in
// backquotes is under runtime/, one in parentheses after it under that one ("`fn` (`fntest`)"
// is runtime/fn/fntest), and "x/*" stands for every package under runtime/x.
func mdLayers(doc string) map[string]string {
	placed := map[string]string{}
	name := regexp.MustCompile(`\(|\)|` + "`([^`]+)`") // a parenthesis, or a name in backquotes
	for _, row := range layerRow.FindAllStringSubmatch(doc, -1) {
		parent, nested := "", false
		for _, m := range name.FindAllStringSubmatch(row[2], -1) {
			switch {
			case m[0] == "(":
				nested = true
			case m[0] == ")":
				nested = false
			case nested:
				placed["runtime/"+parent+"/"+m[1]] = row[1]
			default:
				parent = m[1]
				placed["runtime/"+m[1]] = row[1]
			}
		}
	}
	return placed
}

// TestArchitectureMdNamesTheRuntimeLayers: ARCHITECTURE.md's table of the layers of runtime/
// places every package where runtimeLayers does.
func TestArchitectureMdNamesTheRuntimeLayers(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	placed := mdLayers(string(raw))
	layerOf := func(pkg string) (string, bool) {
		if l, ok := placed[pkg]; ok {
			return l, true
		}
		for p, l := range placed {
			if base, ok := strings.CutSuffix(p, "/*"); ok && strings.HasPrefix(pkg, base+"/") {
				return l, true
			}
		}
		return "", false
	}
	for pkg, want := range runtimeLayers {
		if got, ok := layerOf(pkg); !ok {
			t.Errorf("ARCHITECTURE.md does not place %s in a layer (runtimeLayers: %s)", pkg, want.name)
		} else if got != want.name {
			t.Errorf("ARCHITECTURE.md places %s in %s, runtimeLayers in %s", pkg, got, want.name)
		}
	}
	for pkg := range placed {
		if _, ok := runtimeLayers[pkg]; !ok && !strings.HasSuffix(pkg, "/*") {
			t.Errorf("ARCHITECTURE.md places %s, which runtimeLayers does not name", pkg)
		}
	}
}
