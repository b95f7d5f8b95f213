package knative_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// command is one simple command of a script: its words, quotes removed, variables left as written.
type command struct {
	script string
	words  []string
}

func (c command) String() string { return c.script + ": " + strings.Join(c.words, " ") }

var redirection = regexp.MustCompile(`^[0-9]*(>|>>|<|>&)`)

// commands splits a bash script into simple commands: continuation lines joined, comments
// dropped, split at newlines, ;, |, || and &&, redirections dropped.
func commands(script, text string) []command {
	var (
		out    []command
		words  []string
		word   strings.Builder
		inWord bool
		quote  rune
	)
	endWord := func() {
		if inWord {
			if w := word.String(); !redirection.MatchString(w) {
				words = append(words, w)
			}
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			out = append(out, command{script: script, words: words})
		}
		words = nil
	}
	runes := []rune(text)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(runes) && runes[i+1] == '\n':
			i++
			endWord()
		case r == '#' && !inWord:
			for i < len(runes) && runes[i] != '\n' {
				i++
			}
			endCommand()
		case r == '\n' || r == ';' || r == '|' || r == '&' && i+1 < len(runes) && runes[i+1] == '&':
			if r == '&' || (r == '|' && i+1 < len(runes) && runes[i+1] == '|') {
				i++
			}
			endCommand()
		case r == ' ' || r == '\t':
			endWord()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	endCommand()
	return out
}

// flags parses the words after a command's positional arguments: --name=value, --name value,
// -n value; names in boolean take no value.
func flags(words []string, boolean ...string) (map[string][]string, []string) {
	got := map[string][]string{}
	var positional []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			positional = append(positional, w)
			continue
		}
		name, value, hasValue := strings.Cut(w, "=")
		if !hasValue && !slices.Contains(boolean, name) && i+1 < len(words) {
			i++
			value = words[i]
		}
		got[name] = append(got[name], value)
	}
	return got, positional
}

func scripts(t *testing.T) []command {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "kn", "*.sh"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no kn scripts in %s/kn: %v", deployDir, err)
	}
	var all []command
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := "kn/" + filepath.Base(f)
		cmds := commands(name, string(raw))
		// Relative manifest paths are relative to deploy/knative.
		if !slices.ContainsFunc(cmds, func(c command) bool {
			return slices.Equal(c.words, []string{"cd", "$(dirname $0)/.."})
		}) && (strings.Contains(string(raw), "--filename") || strings.Contains(string(raw), "kubectl apply")) {
			t.Errorf("%s applies manifests by relative path but does not cd \"$(dirname \"$0\")/..\"", name)
		}
		all = append(all, cmds...)
	}
	return all
}

// deployment records what the scripts apply: whole files, Services from a file, Triggers.
type deployment struct {
	files    map[string]bool // applied with kubectl apply -f
	services map[string]bool // "file/name": applied with kn service apply --filename file
	triggers map[string]bool // Trigger names created by a checked kn trigger create
	problems []string        // commands that would deploy something other than the manifests
}

func (d *deployment) problem(c command, format string, args ...any) {
	d.problems = append(d.problems, c.String()+": "+fmt.Sprintf(format, args...))
}

// The kn scripts apply what tests/knative validates: kubectl apply -f of the manifest files, kn
// service apply --filename of the Service's own manifest (only the image swapped), and kn trigger
// commands whose every flag matches the Trigger in the manifests.
func TestKnScriptsApplyTheValidatedManifests(t *testing.T) {
	objects := manifests(t)
	for _, p := range undeployed(checkScripts(scripts(t), objects), objects) {
		t.Error(p)
	}
}

// undeployed adds to the scripts' problems every object that no script applies.
func undeployed(d deployment, objects []object) []string {
	problems := d.problems
	for _, o := range objects {
		meta := metaOf(o)
		switch {
		case d.files[o.File]:
		case meta.is("serving.knative.dev/v1", "Service", "") && d.services[o.File+"/"+meta.Metadata.Name]:
		case meta.is("eventing.knative.dev/v1", "Trigger", "") && d.triggers[meta.Metadata.Name]:
		default:
			problems = append(problems, fmt.Sprintf("%s %s (%s) is applied by no script in kn/: add `kubectl apply -f %s` to kn/00-platform.sh or a kn command for it",
				meta.Kind, meta.Metadata.Name, o.File, o.File))
		}
	}
	return problems
}

func checkScripts(cmds []command, objects []object) deployment {
	d := deployment{files: map[string]bool{}, services: map[string]bool{}, triggers: map[string]bool{}}
	for _, c := range cmds {
		w := c.words
		switch {
		case w[0] == "kubectl" && len(w) > 1 && w[1] == "apply":
			fl, _ := flags(w[2:], "--server-side")
			for name := range fl {
				if !slices.Contains([]string{"-f", "--filename", "--server-side", "--field-manager", "-n", "--namespace"}, name) {
					d.problem(c, "kubectl apply %s changes what is applied; keep it in the manifest", name)
				}
			}
			for _, f := range append(fl["-f"], fl["--filename"]...) {
				if !slices.ContainsFunc(objects, func(o object) bool { return o.File == filepath.Clean(f) }) {
					d.problem(c, "%s is no manifest in deploy/knative", f)
				}
				d.files[filepath.Clean(f)] = true
			}
		case w[0] == "kn" && len(w) > 3 && w[1] == "service" && (w[2] == "apply" || w[2] == "create"):
			name, file := w[3], d.knServiceFile(c)
			if file != "" {
				if !slices.ContainsFunc(objects, func(o object) bool { return o.File == file && isService(o, name) }) {
					d.problem(c, "%s has no serving.knative.dev/v1 Service %s", file, name)
				}
				d.services[file+"/"+name] = true
			}
		case w[0] == "kn" && len(w) > 3 && w[1] == "trigger" && (w[2] == "create" || w[2] == "update"):
			d.checkKnTrigger(c, objects)
			d.triggers[w[3]] = true
		case w[0] == "kn":
			d.problem(c, "no test compares this kn command with a manifest; apply the manifest with kubectl instead")
		}
	}
	return d
}

// knServiceFile checks that a kn service command takes the whole Service from its manifest and
// returns that file; kn may only swap the image and choose the namespace.
func (d *deployment) knServiceFile(c command) string {
	fl, _ := flags(c.words[4:])
	for name := range fl {
		if !slices.Contains([]string{"-n", "--namespace", "-f", "--filename", "--image"}, name) {
			d.problem(c, "%s would deploy something other than the validated manifest: set it in the manifest", name)
		}
	}
	files := append(fl["-f"], fl["--filename"]...)
	if len(files) != 1 {
		d.problem(c, "takes the Service from no manifest (--filename NAME.yaml)")
		return ""
	}
	return filepath.Clean(files[0])
}

func isService(o object, name string) bool {
	return metaOf(o).is("serving.knative.dev/v1", "Service", name)
}

// triggerSpec is the part of a Trigger kn trigger create can express; anything else in its spec
// means the Trigger must be applied from the manifest.
type triggerSpec struct {
	Broker string `json:"broker"`
	Filter *struct {
		Attributes map[string]string `json:"attributes"`
	} `json:"filter"`
	Subscriber struct {
		Ref *struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"ref"`
		URI string `json:"uri"`
	} `json:"subscriber"`
}

// checkKnTrigger compares each flag of kn trigger create/update with the Trigger of that name.
func (d *deployment) checkKnTrigger(c command, objects []object) {
	name := c.words[3]
	var spec *triggerSpec
	for _, o := range objects {
		if !metaOf(o).is("eventing.knative.dev/v1", "Trigger", name) {
			continue
		}
		var tr struct{ Spec json.RawMessage }
		_ = json.Unmarshal(o.JSON, &tr)
		var all map[string]json.RawMessage
		_ = json.Unmarshal(tr.Spec, &all)
		for _, field := range slices.Sorted(maps.Keys(all)) {
			if field != "broker" && field != "filter" && field != "subscriber" {
				d.problem(c, "Trigger %s sets spec.%s, which kn trigger cannot: apply %s with kubectl", name, field, o.File)
			}
		}
		dec := json.NewDecoder(strings.NewReader(string(tr.Spec)))
		dec.DisallowUnknownFields()
		spec = &triggerSpec{}
		if err := dec.Decode(spec); err != nil {
			d.problem(c, "Trigger %s has a spec kn trigger cannot express (%v): apply %s with kubectl", name, err, o.File)
			return
		}
	}
	if spec == nil {
		d.problem(c, "no Trigger %s in the manifests", name)
		return
	}
	fl, _ := flags(c.words[4:])
	for flag, values := range fl {
		switch flag {
		case "-n", "--namespace":
		case "--broker", "-b":
			if values[len(values)-1] != spec.Broker {
				d.problem(c, "--broker %s, the manifest says %s", values[len(values)-1], spec.Broker)
			}
		case "--filter":
			got := map[string]string{}
			for _, v := range values {
				k, val, _ := strings.Cut(v, "=")
				got[k] = val
			}
			var want map[string]string
			if spec.Filter != nil {
				want = spec.Filter.Attributes
			}
			if !maps.Equal(got, want) {
				d.problem(c, "--filter %v, the manifest filters on %v", got, want)
			}
		case "--sink", "-s":
			ref, want := spec.Subscriber.Ref, spec.Subscriber.URI // no ref: the URI is the sink
			switch {
			case ref != nil && ref.APIVersion == "serving.knative.dev/v1" && ref.Kind == "Service":
				want = "ksvc:" + ref.Name
				if spec.Subscriber.URI != "" {
					want += ":" + spec.Subscriber.URI
				}
			case ref != nil:
				want = "a " + ref.Kind + " (not compared: apply triggers.yaml with kubectl)"
			}
			if got := values[len(values)-1]; got != want {
				d.problem(c, "--sink %s, the manifest's subscriber is %s", got, want)
			}
		default:
			d.problem(c, "%s is not compared with the manifest; set it in triggers.yaml and apply that", flag)
		}
	}
	if c.words[2] == "create" && (fl["--broker"] == nil && fl["-b"] == nil || fl["--sink"] == nil && fl["-s"] == nil) {
		d.problem(c, "kn trigger create needs --broker and --sink from the manifest")
	}
	if fl["--filter"] == nil && spec.Filter != nil && len(spec.Filter.Attributes) > 0 {
		d.problem(c, "sets no --filter, the manifest filters on %v", spec.Filter.Attributes)
	}
}

// The script checks catch a kn command that deploys something other than the manifests.
func TestKnScriptChecksCatchDivergence(t *testing.T) {
	objects, err := readManifests(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, script, want string }{
		{"a kn flag beside the manifest", `kn service apply simulation-api -n "$NS" --filename simulation-api.yaml --image "$IMAGE" --env A=b`,
			"--env would deploy something other than the validated manifest"},
		{"a Service from flags only", `kn service apply simulation-api --image "$IMAGE" \
  --scale-min 1`, "takes the Service from no manifest"},
		{"the wrong manifest", `kn service apply simulation-api --filename trace-replayer.yaml --image x`,
			"trace-replayer.yaml has no serving.knative.dev/v1 Service simulation-api"},
		{"a filter the Trigger lacks", `kn trigger create task-queued-to-trace-replayer --broker lensfn \
  --filter type=dev.lensfn.simulation.task.queued.v1 --filter source=/lensfn/other --sink ksvc:trace-replayer:/events`,
			"--filter map[source:/lensfn/other type:dev.lensfn.simulation.task.queued.v1], the manifest filters on"},
		{"another sink", `kn trigger create task-queued-to-trace-replayer --broker lensfn --filter type=dev.lensfn.simulation.task.queued.v1 \
  --filter source=/lensfn/simulation-api --sink ksvc:result-analyzer:/events 2>/dev/null || echo exists`,
			"--sink ksvc:result-analyzer:/events, the manifest's subscriber is ksvc:trace-replayer:/events"},
		{"a Trigger not in the manifests", `kn trigger create nowhere --broker lensfn --sink ksvc:x`, "no Trigger nowhere in the manifests"},
		{"a kn command nothing checks", `kn broker create lensfn --retry 3 # the manifest says 5`, "no test compares this kn command with a manifest"},
		{"kubectl apply of a file that is not there", `kubectl apply -f namespace.yaml -f secrets.yaml`, "secrets.yaml is no manifest in deploy/knative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems := checkScripts(commands("kn/test.sh", tc.script), objects).problems
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Fatalf("no problem contains %q: %q", tc.want, problems)
			}
		})
	}
	// Nothing applied: every object is reported, by kind, name and file.
	problems := undeployed(checkScripts(nil, objects), objects)
	for _, want := range []string{"Service simulation-api (simulation-api.yaml) is applied by no script", "ConfigMap config-features (config-features.yaml)", "Trigger task-queued-to-trace-replayer (triggers.yaml)"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem contains %q", want)
		}
	}
}

func TestCommandsSplitLikeBash(t *testing.T) {
	got := commands("s", `#!/usr/bin/env bash
cd "$(dirname "$0")/.." # to deploy/knative
kn a 'b c' \
  --d=e 2>/dev/null ||
  kn f; kn g && kn h | kn i
`)
	want := [][]string{{"cd", "$(dirname $0)/.."}, {"kn", "a", "b c", "--d=e"}, {"kn", "f"}, {"kn", "g"}, {"kn", "h"}, {"kn", "i"}}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if !slices.Equal(got[i].words, want[i]) {
			t.Errorf("command %d = %q, want %q", i, got[i].words, want[i])
		}
	}
}
