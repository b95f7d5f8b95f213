package manifests_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/functions/console"
	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/functions/inventoryapi"
	"github.com/lensfn/lensfn/functions/resultanalyzer"
	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/functions/tracereplayer"
	"github.com/lensfn/lensfn/functions/workfloworchestrator"
)

// consumers lists what each function consumes. A function missing here fails the test, so a new
// function cannot skip the check.
var consumers = map[string][]string{
	simulationapi.Name:        simulationapi.Consumes,
	tracereplayer.Name:        tracereplayer.Consumes,
	resultanalyzer.Name:       resultanalyzer.Consumes,
	evaluationapi.Name:        evaluationapi.Consumes,
	benchmarkrunner.Name:      benchmarkrunner.Consumes,
	inventoryapi.Name:         nil, // HTTP only
	deployer.Name:             deployer.Consumes,
	workfloworchestrator.Name: workfloworchestrator.Consumes,
	"inference-sim":           nil, // a target endpoint: HTTP only
	"inference-router":        nil, // a data-plane proxy in front of replicas: HTTP only
	console.Name:              nil, // web pages over the APIs: HTTP only
}

const root = "../.."

func load(t *testing.T) *local.Manifests {
	t.Helper()
	m, err := local.LoadManifests(filepath.Join(root, "deploy", "knative"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// functionServices lists the Service each function folder builds: the cmd whose name is the
// folder's with its hyphens (functions/benchmarkrunner/cmd/benchmark-runner is benchmark-runner;
// the deployer's cmd/deployer-local is a local build of the same Service).
func functionServices(t *testing.T) []string {
	t.Helper()
	cmds, err := filepath.Glob(filepath.Join(root, "functions", "*", "cmd", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cmd := range cmds {
		name, folder := filepath.Base(cmd), filepath.Base(filepath.Dir(filepath.Dir(cmd)))
		if strings.ReplaceAll(name, "-", "") == folder {
			names = append(names, name)
		}
	}
	if folders, _ := filepath.Glob(filepath.Join(root, "functions", "*", "doc.go")); len(names) != len(folders) {
		t.Fatalf("%d function folders but %d cmds named after them: %v", len(folders), len(names), names)
	}
	return names
}

func TestEveryFunctionHasAServiceAndKnCommands(t *testing.T) {
	m := load(t)
	for _, name := range functionServices(t) {
		svc, ok := m.Service(name)
		if !ok {
			t.Errorf("function %s has no Knative Service in deploy/knative", name)
			continue
		}
		if want := "ko://github.com/lensfn/lensfn/" + local.CmdPackage(name); svc.Image != want {
			t.Errorf("Service %s image %q, want %s", name, svc.Image, want)
		}
		if _, ok := consumers[name]; !ok {
			t.Errorf("functions/%s is not listed in this test's consumers table", name)
		}
		script, err := os.ReadFile(filepath.Join(root, "deploy", "knative", "kn", name+".sh"))
		if err != nil {
			t.Errorf("functions/%s has no deploy/knative/kn/%s.sh: %v", name, name, err)
			continue
		}
		if !strings.Contains(string(script), "kn service apply "+name) && !strings.Contains(string(script), "kn service create "+name) {
			t.Errorf("kn/%s.sh does not create the Service", name)
		}
	}
	if len(m.Services) == 0 {
		t.Fatal("no Services parsed")
	}
}

// TestPathPrefixesRouteEachFamilyToOneFunction: the ingress sends every route family a function
// serves to it, and no prefix is claimed twice.
func TestPathPrefixesRouteEachFamilyToOneFunction(t *testing.T) {
	m := load(t)
	inv, ok := m.Service(inventoryapi.Name)
	if !ok {
		t.Fatal("no inventory-api Service")
	}
	if got := inv.PathPrefixes(); !slices.Equal(got, inventoryapi.PathPrefixes) {
		t.Errorf("inventory-api path prefixes %v, want %v", got, inventoryapi.PathPrefixes)
	}
	roots := 0
	for _, svc := range m.Services {
		if svc.ServesRoot() {
			roots++
			if svc.Name != console.Name {
				t.Errorf("%s claims / (only the console serves every path no API claims)", svc.Name)
			}
		}
	}
	if roots != 1 {
		t.Errorf("%d Services claim /, want the console alone", roots)
	}
	owner := map[string]string{}
	for _, svc := range m.Services {
		for _, p := range svc.PathPrefixes() {
			if other, taken := owner[p]; taken {
				t.Errorf("path prefix %s is claimed by %s and %s", p, other, svc.Name)
			}
			owner[p] = svc.Name
		}
	}
}

func TestEveryConsumedEventTypeHasATrigger(t *testing.T) {
	m := load(t)
	for function, types := range consumers {
		for _, eventType := range types {
			routed := false
			for _, tr := range m.Triggers {
				if tr.Subscriber == function && tr.Path == "/events" && tr.Matches(attributesOf(eventType)) {
					routed = true
				}
			}
			if !routed {
				t.Errorf("%s consumes %s but no Trigger delivers it to its /events", function, eventType)
			}
		}
	}
}

// attributesOf are the attributes an event of the type carries that Triggers filter on.
func attributesOf(eventType string) map[string]string {
	d, _ := events.LookupConsumed(eventType)
	attrs := map[string]string{"type": eventType, "source": d.Source}
	for k, v := range d.Extensions {
		attrs[k] = v
	}
	return attrs
}

func TestEveryTriggerNamesAFunctionAndACataloguedType(t *testing.T) {
	m := load(t)
	if len(m.Triggers) == 0 {
		t.Fatal("no Triggers parsed")
	}
	scripts := readScripts(t)
	for _, tr := range m.Triggers {
		if _, ok := m.Service(tr.Subscriber); !ok {
			t.Errorf("Trigger %s delivers to %q, which has no Service", tr.Name, tr.Subscriber)
		}
		eventType := tr.Attributes["type"]
		if _, ok := events.LookupConsumed(eventType); !ok {
			t.Errorf("Trigger %s filters on type %q, which is not in the events catalogue (nor events.External)", tr.Name, eventType)
		}
		if !slices.Contains(consumers[tr.Subscriber], eventType) {
			t.Errorf("Trigger %s sends %s to %s, which does not consume it", tr.Name, eventType, tr.Subscriber)
		}
		if !strings.Contains(scripts, "kn trigger create "+tr.Name) {
			t.Errorf("Trigger %s has no kn trigger create command in deploy/knative/kn", tr.Name)
		}
		if len(m.Brokers) == 0 || tr.Broker != m.Brokers[0].Metadata.Name {
			t.Errorf("Trigger %s uses broker %q, which is not defined", tr.Name, tr.Broker)
		}
	}
}

func readScripts(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "deploy", "knative", "kn", "*.sh"))
	var all strings.Builder
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(raw)
	}
	return all.String()
}

func TestTriggerFiltersBehaveLikeKnative(t *testing.T) {
	tr := local.Trigger{Filters: []local.Filter{
		{Exact: map[string]string{"type": "dev.lensfn.a.v1"}},
		{Prefix: map[string]string{"source": "/lensfn/"}},
		{Not: &local.Filter{Exact: map[string]string{"traceformat": "legacy"}}},
		{Any: []local.Filter{{Suffix: map[string]string{"subject": "-a"}}, {Exact: map[string]string{"subject": "b"}}}},
	}}
	cases := []struct {
		name  string
		attrs map[string]string
		want  bool
	}{
		{"all match", map[string]string{"type": "dev.lensfn.a.v1", "source": "/lensfn/x", "subject": "x-a"}, true},
		{"any second branch", map[string]string{"type": "dev.lensfn.a.v1", "source": "/lensfn/x", "subject": "b"}, true},
		{"wrong type", map[string]string{"type": "dev.lensfn.b.v1", "source": "/lensfn/x", "subject": "b"}, false},
		{"wrong prefix", map[string]string{"type": "dev.lensfn.a.v1", "source": "/other", "subject": "b"}, false},
		{"not excludes", map[string]string{"type": "dev.lensfn.a.v1", "source": "/lensfn/x", "subject": "b", "traceformat": "legacy"}, false},
		{"missing attribute", map[string]string{"type": "dev.lensfn.a.v1", "subject": "b"}, false},
	}
	for _, tc := range cases {
		if got := tr.Matches(tc.attrs); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	legacy := local.Trigger{Attributes: map[string]string{"type": "dev.lensfn.a.v1", "cluster": "lab1"}}
	if !legacy.Matches(map[string]string{"type": "dev.lensfn.a.v1", "cluster": "lab1", "id": "1"}) ||
		legacy.Matches(map[string]string{"type": "dev.lensfn.a.v1"}) {
		t.Error("legacy attribute filter must require every pair, extensions included")
	}
}
