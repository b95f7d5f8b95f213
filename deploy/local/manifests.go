package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Object is the part of a Kubernetes object the stack reads.
type Object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec yaml.Node `yaml:"spec"`
	File string    `yaml:"-"`
}

// Manifests are the objects of deploy/knative that the stack runs.
type Manifests struct {
	Services []Service
	Triggers []Trigger
	Brokers  []Object
	All      []Object
}

// Service is a Knative Service reduced to what a local process needs.
type Service struct {
	Name  string
	Image string // a ko:// reference to the function's cmd
	// Package is the cmd (module-relative) the local stack runs: the image's, or the local
	// build LocalBuilds names for it; Binary is its name in the bin dir.
	Package string
	Binary  string
	Env     map[string]string
	// ClusterEnv names the variables the manifest fills from Secrets or fields (valueFrom); the
	// stack supplies local equivalents only for these (LENS_SECRET_KEY goes only where a
	// manifest asks for it).
	ClusterEnv    []string
	Args          []string
	ReadinessPath string
	PathPrefix    string // lensfn.dev/path-prefix: the routes the ingress sends here, comma-separated
	Object        Object
}

// Trigger is a Knative Trigger reduced to its filter and subscriber.
type Trigger struct {
	Name       string
	Broker     string
	Attributes map[string]string // legacy exact filter: every attribute must match
	Filters    []Filter          // new-style filters, ANDed (exact, prefix, suffix, all, any, not)
	Subscriber string            // Service name
	Path       string            // subscriber uri path
	Object     Object
}

// Filter is one entry of a Trigger's spec.filters.
type Filter struct {
	Exact  map[string]string `yaml:"exact"`
	Prefix map[string]string `yaml:"prefix"`
	Suffix map[string]string `yaml:"suffix"`
	All    []Filter          `yaml:"all"`
	Any    []Filter          `yaml:"any"`
	Not    *Filter           `yaml:"not"`
	CESQL  string            `yaml:"cesql"`
}

const koPrefix = "ko://github.com/lensfn/lensfn/"

// CmdPackage is the module-relative cmd of the function a Service is named after: its package
// folder drops the hyphens (Go package names have none), its cmd keeps the Service's name, so
// the binary is named as the Service (functions/benchmarkrunner/cmd/benchmark-runner).
func CmdPackage(service string) string {
	return "functions/" + strings.ReplaceAll(service, "-", "") + "/cmd/" + service
}

// LocalBuilds maps the image cmd of a function that the local stack runs from a build of its own
// to that build's cmd (both module-relative; `make build` builds the local one instead). The
// deployer's image has the local and the knative provider; a local stack deploys on local
// cluster sessions only, so it runs the deployer with the local provider alone, which links none
// of the knative provider's Kubernetes and Knative Serving packages (#11: a cold make run
// compiles about 110 packages fewer).
var LocalBuilds = map[string]string{"functions/deployer/cmd/deployer": "functions/deployer/cmd/deployer-local"}

// LoadManifests reads every *.yaml file of dir.
func LoadManifests(dir string) (*Manifests, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	m := &Manifests{}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var obj Object
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if obj.Kind == "" {
				continue
			}
			obj.File = filepath.Base(file)
			m.All = append(m.All, obj)
			switch {
			case obj.Kind == "Service" && strings.HasPrefix(obj.APIVersion, "serving.knative.dev/"):
				s, err := serviceOf(obj)
				if err != nil {
					return nil, fmt.Errorf("%s: Service %s: %w", file, obj.Metadata.Name, err)
				}
				m.Services = append(m.Services, s)
			case obj.Kind == "Trigger":
				t, err := triggerOf(obj)
				if err != nil {
					return nil, fmt.Errorf("%s: Trigger %s: %w", file, obj.Metadata.Name, err)
				}
				m.Triggers = append(m.Triggers, t)
			case obj.Kind == "Broker":
				m.Brokers = append(m.Brokers, obj)
			}
		}
	}
	return m, nil
}

// Service returns the named service.
func (m *Manifests) Service(name string) (Service, bool) {
	for _, s := range m.Services {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}

// PathPrefixes are the route prefixes of the path-prefix annotation, without trailing slashes
// (a function serving several route families lists them comma-separated).
func (s Service) PathPrefixes() []string {
	var out []string
	for _, p := range strings.Split(s.PathPrefix, ",") {
		if p = strings.TrimRight(strings.TrimSpace(p), "/"); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ServesRoot says whether the service's prefixes include "/": it gets every path no other
// prefix claims (the console).
func (s Service) ServesRoot() bool {
	for _, p := range strings.Split(s.PathPrefix, ",") {
		if strings.TrimSpace(p) == "/" {
			return true
		}
	}
	return false
}

func serviceOf(obj Object) (Service, error) {
	var spec struct {
		Template struct {
			Spec struct {
				Containers []struct {
					Image string   `yaml:"image"`
					Args  []string `yaml:"args"`
					Env   []struct {
						Name      string     `yaml:"name"`
						Value     string     `yaml:"value"`
						ValueFrom *yaml.Node `yaml:"valueFrom"`
					} `yaml:"env"`
					ReadinessProbe *struct {
						HTTPGet *struct {
							Path string `yaml:"path"`
						} `yaml:"httpGet"`
					} `yaml:"readinessProbe"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	}
	if err := obj.Spec.Decode(&spec); err != nil {
		return Service{}, err
	}
	cs := spec.Template.Spec.Containers
	if len(cs) != 1 {
		return Service{}, fmt.Errorf("has %d containers, want 1", len(cs))
	}
	c := cs[0]
	if !strings.HasPrefix(c.Image, koPrefix) {
		return Service{}, fmt.Errorf("image %q is not a %s reference", c.Image, koPrefix)
	}
	pkg := strings.TrimPrefix(c.Image, koPrefix)
	if local, ok := LocalBuilds[pkg]; ok {
		pkg = local
	}
	s := Service{Name: obj.Metadata.Name, Image: c.Image, Package: pkg, Binary: path.Base(pkg), Env: map[string]string{}, Args: c.Args,
		ReadinessPath: "/readyz", PathPrefix: obj.Metadata.Annotations["lensfn.dev/path-prefix"], Object: obj}
	for _, e := range c.Env {
		if e.ValueFrom == nil { // field and secret references only exist on a cluster
			s.Env[e.Name] = e.Value
		} else {
			s.ClusterEnv = append(s.ClusterEnv, e.Name)
		}
	}
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != "" {
		s.ReadinessPath = c.ReadinessProbe.HTTPGet.Path
	}
	return s, nil
}

func triggerOf(obj Object) (Trigger, error) {
	var spec struct {
		Broker string `yaml:"broker"`
		Filter *struct {
			Attributes map[string]string `yaml:"attributes"`
		} `yaml:"filter"`
		Filters    []Filter `yaml:"filters"`
		Subscriber struct {
			Ref *struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"ref"`
			URI string `yaml:"uri"`
		} `yaml:"subscriber"`
	}
	if err := obj.Spec.Decode(&spec); err != nil {
		return Trigger{}, err
	}
	if spec.Subscriber.Ref == nil || spec.Subscriber.Ref.Kind != "Service" {
		return Trigger{}, errors.New("subscriber must reference a Knative Service")
	}
	t := Trigger{Name: obj.Metadata.Name, Broker: spec.Broker, Filters: spec.Filters,
		Subscriber: spec.Subscriber.Ref.Name, Path: spec.Subscriber.URI, Object: obj}
	if spec.Filter != nil {
		t.Attributes = spec.Filter.Attributes
	}
	for _, f := range t.Filters {
		if f.usesCESQL() {
			return Trigger{}, errors.New("CESQL filters are not supported by the local stack; use exact/prefix/suffix/all/any/not")
		}
	}
	if t.Path == "" {
		t.Path = "/"
	}
	return t, nil
}

// Matches applies the Trigger's filters to an event's attributes (context attributes and
// extensions by name). As in Knative, spec.filters wins over spec.filter when both are set.
func (t Trigger) Matches(attrs map[string]string) bool {
	if len(t.Filters) > 0 {
		for _, f := range t.Filters {
			if !f.matches(attrs) {
				return false
			}
		}
		return true
	}
	for k, v := range t.Attributes {
		if got, ok := attrs[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (f Filter) matches(attrs map[string]string) bool {
	each := func(m map[string]string, ok func(got, want string) bool) bool {
		for k, want := range m {
			got, present := attrs[k]
			if !present || !ok(got, want) {
				return false
			}
		}
		return true
	}
	if !each(f.Exact, func(g, w string) bool { return g == w }) ||
		!each(f.Prefix, strings.HasPrefix) ||
		!each(f.Suffix, strings.HasSuffix) {
		return false
	}
	for _, sub := range f.All {
		if !sub.matches(attrs) {
			return false
		}
	}
	if len(f.Any) > 0 {
		matched := false
		for _, sub := range f.Any {
			matched = matched || sub.matches(attrs)
		}
		if !matched {
			return false
		}
	}
	if f.Not != nil && f.Not.matches(attrs) {
		return false
	}
	return true
}

func (f Filter) usesCESQL() bool {
	if f.CESQL != "" || (f.Not != nil && f.Not.usesCESQL()) {
		return true
	}
	for _, sub := range append(append([]Filter{}, f.All...), f.Any...) {
		if sub.usesCESQL() {
			return true
		}
	}
	return false
}
