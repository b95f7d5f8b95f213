package inventoryapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// Name is the function's Knative Service name.
const Name = "inventory-api"

// PathPrefixes are the route families this function serves (its lensfn.dev/path-prefix).
var PathPrefixes = []string{"/api/cluster", "/api/v1/deployments", "/api/v1/model-services", "/api/v1/configurations"}

// Config is the function's own settings, read from the environment at start (LoadConfig).
type Config struct {
	// ProbeInterval is how often Model Service members are health-probed
	// (LENS_MEMBER_PROBE_INTERVAL, 10ms-1h).
	ProbeInterval time.Duration `env:"LENS_MEMBER_PROBE_INTERVAL" envDefault:"10s"`
	// ProbeTimeout bounds one endpoint probe, at registration and in the health loop
	// (LENS_ENDPOINT_PROBE_TIMEOUT, 10ms-1h).
	ProbeTimeout time.Duration `env:"LENS_ENDPOINT_PROBE_TIMEOUT" envDefault:"5s"`
}

// Validate holds both durations to 10ms-1h.
func (c *Config) Validate() error {
	for _, v := range []struct {
		name string
		d    time.Duration
	}{{"LENS_MEMBER_PROBE_INTERVAL", c.ProbeInterval}, {"LENS_ENDPOINT_PROBE_TIMEOUT", c.ProbeTimeout}} {
		if v.d < 10*time.Millisecond || v.d > time.Hour {
			return fmt.Errorf("%s=%s is not a duration from 10ms to 1h", v.name, v.d)
		}
	}
	return nil
}

// LoadConfig reads the function's settings through the runtime's environment reader.
func LoadConfig(c fn.Config) (Config, error) {
	var cfg Config
	err := c.ReadSettings(&cfg)
	return cfg, err
}

// API serves the inventory routes.
type API struct {
	deps     fn.Deps
	cfg      Config
	repo     *inventory.Repo
	client   *http.Client
	prober   *Prober
	endpoint *prometheus.CounterVec
	// doc is the OpenAPI document rendered from the route table.
	doc []byte
}

// Build is the function's Builder.
func Build(_ context.Context, d fn.Deps) (*fn.Function, error) {
	cfg, err := LoadConfig(d.Config)
	if err != nil {
		return nil, err
	}
	f, _, err := New(d, cfg)
	return f, err
}

// New builds the function with its configuration.
func New(d fn.Deps, cfg Config) (*fn.Function, *API, error) {
	sealer, err := d.Config.Sealer()
	if err != nil {
		return nil, nil, err
	}
	endpointProbes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_inventory_endpoint_probes_total",
		Help: "Model-list probes of endpoints being registered as deployment executions, by outcome (ok, failed)."}, []string{"outcome"})
	memberProbes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_inventory_member_probes_total",
		Help: "Health probes of Model Service members, by outcome (healthy, unhealthy)."}, []string{"outcome"})
	sweeps := prometheus.NewCounter(prometheus.CounterOpts{Name: "lens_inventory_probe_sweeps_total",
		Help: "Member health sweeps this instance ran (one instance sweeps at a time)."})
	d.Metrics.Registry.MustRegister(endpointProbes, memberProbes, sweeps)

	// Every probe goes through the operator's endpoint policy, and redirects are not followed: an
	// API key is only ever sent to the endpoint it was given for.
	client := &http.Client{Transport: d.Egress.Transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// a delete is not refused for a use a cancelled or finished run left behind
	repo := &inventory.Repo{Store: d.Store, Sealer: sealer, HolderEnded: (&evalrun.Repo{Store: d.Store}).Ended, Endpoints: d.Egress}
	a := &API{deps: d, cfg: cfg, repo: repo, client: client, endpoint: endpointProbes}
	a.prober = &Prober{Repo: repo, Store: d.Store, Client: client, Owner: d.Config.InstanceID, Interval: cfg.ProbeInterval,
		Timeout: cfg.ProbeTimeout, Probes: memberProbes, Sweeps: sweeps,
		Log: func(msg string, kv ...any) { d.Log.Warnw(msg, kv...) }}

	routes, err := a.routes()
	if err != nil {
		return nil, nil, err
	}
	return &fn.Function{
		Routes: routes,
		// The runtime runs the health loop once the server listens and stops it at the drain.
		Start: a.prober.Run,
	}, a, nil
}

// Repo is the inventory the function serves (tests seed and inspect records through it).
func (a *API) Repo() *inventory.Repo { return a.repo }

// Prober is the function's member health prober.
func (a *API) Prober() *Prober { return a.prober }

// listPage reads offset and limit (1-500, default 50) from the query; 422 otherwise.
func listPage(r *http.Request) (inventory.Page, error) {
	p := inventory.Page{Limit: 50}
	for name, dst := range map[string]*int{"offset": &p.Offset, "limit": &p.Limit} {
		raw := r.URL.Query().Get(name)
		if raw == "" {
			continue
		}
		v, err := strconv.Atoi(raw)
		if err != nil || v < 0 || name == "limit" && (v < 1 || v > 500) || v > 1_000_000 {
			return p, problem.Validation(problem.Field("must be an integer (offset >= 0, limit 1-500)", "int_parsing", "query", name))
		}
		*dst = v
	}
	return p, nil
}

// queryValue reads a bounded filter from the query.
func queryValue(r *http.Request, name string) (string, error) {
	v := r.URL.Query().Get(name)
	if len(v) > 256 {
		return "", problem.Validation(problem.Field("at most 256 characters", "string_too_long", "query", name))
	}
	return v, nil
}

func queryValues(r *http.Request, names ...string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	for _, n := range names {
		v, err := queryValue(r, n)
		if err != nil {
			return nil, err
		}
		out[n] = v
	}
	return out, nil
}

// listing is the shape of every list answer.
type listing[T any] struct {
	Items []T `json:"items"`
	Total int `json:"total"`
}

func writeList[T any](w http.ResponseWriter, items []T, total int, err error) error {
	if errors.Is(err, state.ErrInvalid) { // a filter value the store cannot index (a status with spaces...)
		return problem.Validation(problem.Field(err.Error(), "value_error", "query"))
	}
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, listing[T]{Items: items, Total: total})
	return nil
}

// required reports the missing fields of a body as one 422.
func required(fields map[string]bool) error {
	var missing []problem.FieldError
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if !fields[name] {
			missing = append(missing, problem.Field("field required", "missing", "body", name))
		}
	}
	if len(missing) > 0 {
		return problem.Validation(missing...)
	}
	return nil
}

// text checks a string field's length: 1..max characters (0 allowed when optional).
func text(field, v string, maxLen int, optional bool) error {
	if (v == "" && !optional) || len(v) > maxLen {
		return problem.Validation(problem.Field(fmt.Sprintf("must be 1-%d characters", maxLen), "string_length", "body", field))
	}
	return nil
}

// firstErr is the first failed check.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
