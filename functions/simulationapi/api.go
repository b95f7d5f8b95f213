package simulationapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/sse"
)

// Name is the function's Knative Service name.
const Name = "simulation-api"

// Consumes lists the event types the function receives at /events; deploy/knative must route
// each of them here with a Trigger (tests/manifests checks it).
var Consumes = []string{events.TypeDatasetDownloaded}

// API serves /api/simulation.
type API struct {
	deps       fn.Deps
	catalogue  *Catalogue
	downloader *Downloader
	timelines  *Timelines
	tasks      *simtask.Repo
	inventory  *inventory.Repo // Model Services that tasks may target
	// watchers holds a slot per open event stream; streamLimits bound each one.
	watchers     sse.Slots
	streamLimits sse.Limits
	// doc is the OpenAPI document rendered from the route table.
	doc []byte
}

// Settings are the function's own, read from the environment at start (fn.Config.ReadSettings).
type Settings struct {
	// DatasetMirror makes downloads fetch <mirror>/<file> instead of the upstream URL
	// (LENS_DATASET_MIRROR, for air-gapped clusters; empty: upstream).
	DatasetMirror string `env:"LENS_DATASET_MIRROR"`
}

// New builds the function. Parsers reads traces (the WASM parser modules in production).
func New(d fn.Deps, parsers TraceParsers) (*fn.Function, *API, error) {
	var settings Settings
	if err := d.Config.ReadSettings(&settings); err != nil {
		return nil, nil, err
	}
	sealer, err := d.Config.Sealer()
	if err != nil {
		return nil, nil, err
	}
	builds := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_simulation_timeline_index_builds_total",
		Help: "Trace parses that built a dataset timeline index, by dataset."}, []string{"dataset"})
	fetches := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_simulation_dataset_fetches_total",
		Help: "Dataset transfers that completed and were verified, by dataset."}, []string{"dataset"})
	d.Metrics.Registry.MustRegister(builds, fetches)

	client := &http.Client{Timeout: 0, Transport: http.DefaultTransport}
	dl := &Downloader{Root: filepath.Join(d.Config.DataDir, "datasets"), Mirror: settings.DatasetMirror,
		Client: client, Store: d.Store, Owner: d.Config.InstanceID, MaxBytes: 2 << 30}
	a := &API{deps: d, downloader: dl, watchers: sse.NewSlots(maxWatchers),
		tasks:     &simtask.Repo{Store: d.Store, Sealer: sealer, DataDir: d.Config.DataDir},
		inventory: &inventory.Repo{Store: d.Store, Sealer: sealer},
		catalogue: &Catalogue{Parsers: parsers, Downloader: dl, Warn: func(file string, err error) {
			d.Log.Warnw("ignoring a local dataset registration", "file", file, "error", err)
		}},
		timelines: &Timelines{Parsers: parsers, OnBuild: func(ds string) { builds.WithLabelValues(ds).Inc() }}}
	// The built-in sample is in place before the first request, so the first replay needs no
	// network; a failure here only delays it to the first download.
	if err := dl.MaterialiseGenerated(Datasets); err != nil {
		d.Log.Warnw("the built-in sample dataset could not be written; POST /trace-datasets/download writes it", "error", err)
	}
	dl.OnFetched = func(ctx context.Context, ds Dataset, res DownloadResult) {
		fetches.WithLabelValues(ds.Name).Inc()
		a.announce(ctx, ds, res)
	}

	routes, err := a.routes()
	if err != nil {
		return nil, nil, err
	}
	return &fn.Function{
		Routes: routes,
		Events: map[string]cloudevent.Handler{Consumes[0]: a.onDatasetDownloaded},
	}, a, nil
}

func (a *API) listBackends(w http.ResponseWriter, r *http.Request) error {
	fn.WriteJSON(w, http.StatusOK, map[string]any{"backends": a.catalogue.backends(r.Context())})
	return nil
}

func (a *API) listScenarios(w http.ResponseWriter, r *http.Request) error {
	fn.WriteJSON(w, http.StatusOK, map[string]any{"scenarios": scenarioViews(a.catalogue.backends(r.Context()), true)})
	return nil
}

func (a *API) listDatasets(w http.ResponseWriter, r *http.Request) error {
	fn.WriteJSON(w, http.StatusOK, map[string]any{"data_dir": a.relative(a.downloader.Root), "datasets": a.catalogue.datasets(r.Context())})
	return nil
}

func (a *API) discover(w http.ResponseWriter, r *http.Request) error {
	var req DiscoverRequest
	if err := fn.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	if req.EndpointURL == nil {
		return problem.Validation(problem.Field("field required", "missing", "body", "endpoint_url"))
	}
	if req.APIKey != nil && len(*req.APIKey) > maxAPIKeyLength {
		return problem.Validation(problem.Field(fmt.Sprintf("at most %d characters", maxAPIKeyLength), "string_too_long", "body", "api_key"))
	}
	if _, err := validateEndpoint("endpoint_url", *req.EndpointURL); err != nil {
		return err
	}
	key := ""
	if req.APIKey != nil {
		key = *req.APIKey
	}
	models, err := DiscoverModels(r.Context(), a.deps.Egress, *req.EndpointURL, key)
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, DiscoverResponse{Endpoint: *req.EndpointURL, Models: models})
	return nil
}

// DownloadRequest is the body of POST /trace-datasets/download.
type DownloadRequest struct {
	Dataset *string `json:"dataset"`
	Force   bool    `json:"force"`
}

func (a *API) download(w http.ResponseWriter, r *http.Request) error {
	var req DownloadRequest
	if err := fn.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	if req.Dataset == nil {
		return problem.Validation(problem.Field("field required", "missing", "body", "dataset"))
	}
	d, ok := a.catalogue.find(*req.Dataset)
	if !ok {
		return problem.New(problem.CodeBadRequest, "%s", a.catalogue.unknown(*req.Dataset))
	}
	if d.Local {
		return problem.New(problem.CodeBadRequest, "dataset %q is registered locally: its file is already in the datasets dir", d.Name)
	}
	res, err := a.downloader.Download(r.Context(), d, req.Force)
	if err != nil {
		return err
	}
	res.Path, res.MetadataPath = a.relative(res.Path), a.relative(res.MetadataPath)
	fn.WriteJSON(w, http.StatusOK, res)
	return nil
}

// announce tells the platform a dataset file is new, so its timeline index is built off the
// request path. The id names this transfer, so a retried send is deduplicated downstream.
func (a *API) announce(ctx context.Context, d Dataset, res DownloadResult) {
	id := fmt.Sprintf("%s/%s/%d", d.Name, res.SHA256[:16], time.Now().UnixNano())
	err := a.deps.Events.Send(ctx, events.TypeDatasetDownloaded, id, d.Name, events.DatasetDownloaded{
		Dataset: d.Name, TraceFormat: d.TraceFormat, Path: res.Path, SHA256: res.SHA256, SizeBytes: res.SizeBytes})
	if err != nil && !errors.Is(err, cloudevent.ErrNoSink) {
		// The file is verified and in place; the index is then built on first use instead.
		a.deps.Log.Warnw("dataset downloaded but its event was not delivered", "dataset", d.Name, "error", err)
	}
}

func (a *API) timeline(w http.ResponseWriter, r *http.Request) error {
	bins := 800
	if raw := r.URL.Query().Get("bins"); raw != "" {
		v, err := strconv.Atoi(raw)
		if err != nil || v < 50 || v > 2000 {
			return problem.Validation(problem.Field("must be an integer from 50 to 2000", "range", "query", "bins"))
		}
		bins = v
	}
	d, ok := a.catalogue.find(r.PathValue("name"))
	if !ok {
		return problem.New(problem.CodeNotFound, "%s", a.catalogue.unknown(r.PathValue("name")))
	}
	if downloaded, _ := a.downloader.Downloaded(d); !downloaded {
		return problem.New(problem.CodeConflict, "trace dataset %q is not downloaded; POST /api/simulation/trace-datasets/download first", d.Name)
	}
	ix, err := a.timelines.Get(r.Context(), d, a.downloader.Path(d))
	if problem.CodeOf(err) == problem.CodeStarting {
		return err
	}
	if err != nil {
		return problem.Wrap(problem.CodeConflict, err, a.scrubPaths(fmt.Sprintf("trace dataset %q could not be parsed: %v", d.Name, err)))
	}
	width, out := ix.Bin(bins)
	fn.WriteJSON(w, http.StatusOK, Timeline{Dataset: d.Name, TraceFormat: d.TraceFormat, RequestCount: ix.RequestCount,
		DurationSeconds: ix.Duration, SourceSizeBytes: ix.SourceSize, BinWidthSeconds: width, Bins: out})
	return nil
}

// onDatasetDownloaded builds the new file's timeline index off the request path.
func (a *API) onDatasetDownloaded(ctx context.Context, e cloudevent.Event) error {
	var p events.DatasetDownloaded
	if err := e.DecodeData(&p); err != nil {
		return err
	}
	d, ok := a.catalogue.find(p.Dataset)
	if !ok {
		return cloudevent.Permanent(fmt.Errorf("unknown dataset %q", p.Dataset))
	}
	if p.Path != a.downloader.Path(d) {
		return cloudevent.Permanent(fmt.Errorf("dataset %q is not at %q in this data dir", p.Dataset, p.Path))
	}
	// On a first start the format's module may still be compiling: wait, keeping the event.
	if err := waitFor(ctx, a.catalogue.Parsers, d.TraceFormat); err != nil {
		return err
	}
	if _, err := a.timelines.Build(ctx, d, p.Path); err != nil {
		return cloudevent.Permanent(fmt.Errorf("index %s: %w", d.Name, err))
	}
	a.deps.Log.Infow("timeline index built", "dataset", d.Name)
	return nil
}
