package simulationapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
)

// Task defaults (spec/NOTES.md).
const (
	defaultDurationSeconds = 60
	defaultTimeoutSeconds  = 3600
	defaultGraceSeconds    = 30
	maxNameLength          = 200
	maxDescriptionLength   = 4000
	maxFieldLength         = 512 // model, namespace, service, cluster and deployment fields
	maxBackendOptionsBytes = 16 << 10
	// A run lasts at most a week; scale factors outside [1/1000, 1000] are typos, and the
	// bounds keep every derived duration finite and representable.
	maxDurationSeconds = 7 * 24 * 3600
	minScaleFactor     = 1e-3
	maxScaleFactor     = 1e3
	maxTraceSeconds    = 1e9
)

// CreateTaskRequest is the body of POST /tasks. Pointers tell "absent" from zero values.
type CreateTaskRequest struct {
	Name                          *string        `json:"name"`
	Description                   *string        `json:"description"`
	Scenario                      *string        `json:"scenario"`
	Backend                       *string        `json:"backend"`
	EndpointMode                  *string        `json:"endpoint_mode"`
	ClusterSessionID              *string        `json:"cluster_session_id"`
	EndpointNamespace             *string        `json:"endpoint_namespace"`
	EndpointService               *string        `json:"endpoint_service"`
	EndpointDeploymentExecutionID *string        `json:"endpoint_deployment_execution_id"`
	EndpointClusterID             *string        `json:"endpoint_cluster_id"`
	EndpointClusterName           *string        `json:"endpoint_cluster_name"`
	EndpointDeploymentName        *string        `json:"endpoint_deployment_name"`
	ModelServiceGroupID           *string        `json:"model_service_group_id"`
	APIKey                        *string        `json:"api_key"`
	EndpointURL                   *string        `json:"endpoint_url"`
	ModelName                     *string        `json:"model_name"`
	TraceDataset                  *string        `json:"trace_dataset"`
	TracePath                     *string        `json:"trace_path"`
	DurationSeconds               *float64       `json:"duration_seconds"`
	ScaleFactor                   *float64       `json:"scale_factor"`
	TraceStartSeconds             *float64       `json:"trace_start_seconds"`
	TraceEndSeconds               *float64       `json:"trace_end_seconds"`
	TraceTimeoutSeconds           *float64       `json:"trace_timeout_seconds"`
	FixedSchedule                 *bool          `json:"fixed_schedule"`
	Stream                        *bool          `json:"stream"`
	BackendOptions                map[string]any `json:"backend_options"`
}

// RerunRequest is the optional body of POST /tasks/{id}/rerun.
type RerunRequest struct {
	EndpointURL                   *string `json:"endpoint_url"`
	EndpointDeploymentExecutionID *string `json:"endpoint_deployment_execution_id"`
	EndpointClusterID             *string `json:"endpoint_cluster_id"`
	EndpointClusterName           *string `json:"endpoint_cluster_name"`
	EndpointDeploymentName        *string `json:"endpoint_deployment_name"`
	ModelServiceGroupID           *string `json:"model_service_group_id"`
	APIKey                        *string `json:"api_key"`
}

func field(msg, kind string, name string) problem.FieldError {
	return problem.Field(msg, kind, "body", name)
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// validateShape checks what the schema alone decides (422).
func (req *CreateTaskRequest) validateShape() error {
	var errs []problem.FieldError
	required := map[string]*string{"scenario": req.Scenario, "endpoint_url": req.EndpointURL, "model_name": req.ModelName,
		"endpoint_deployment_execution_id": req.EndpointDeploymentExecutionID}
	names := []string{"scenario", "endpoint_url", "model_name"}
	if req.boundToExecution() {
		// The execution gives the endpoint and the model (model_name, when given, is checked).
		names = []string{"scenario", "endpoint_deployment_execution_id"}
	}
	for _, name := range names {
		if v := required[name]; v == nil || strings.TrimSpace(*v) == "" {
			errs = append(errs, field("field required", "missing", name))
		}
	}
	if req.Scenario != nil && strings.TrimSpace(*req.Scenario) != "" && !knownScenario(*req.Scenario) {
		errs = append(errs, field("must be one of "+strings.Join(scenarioNames(), ", "), "enum", "scenario"))
	}
	if req.TraceDataset == nil && req.TracePath == nil {
		errs = append(errs, field("trace_dataset or trace_path is required", "missing", "trace_dataset"))
	}
	if req.Name != nil && len(*req.Name) > maxNameLength {
		errs = append(errs, field(fmt.Sprintf("at most %d characters", maxNameLength), "string_too_long", "name"))
	}
	if req.APIKey != nil && len(*req.APIKey) > maxAPIKeyLength {
		errs = append(errs, field(fmt.Sprintf("at most %d characters", maxAPIKeyLength), "string_too_long", "api_key"))
	}
	if req.Description != nil && len(*req.Description) > maxDescriptionLength {
		errs = append(errs, field(fmt.Sprintf("at most %d characters", maxDescriptionLength), "string_too_long", "description"))
	}
	for name, v := range map[string]*string{"model_name": req.ModelName, "scenario": req.Scenario, "backend": req.Backend,
		"endpoint_mode": req.EndpointMode, "cluster_session_id": req.ClusterSessionID, "endpoint_namespace": req.EndpointNamespace,
		"endpoint_service": req.EndpointService, "endpoint_deployment_execution_id": req.EndpointDeploymentExecutionID,
		"endpoint_cluster_id": req.EndpointClusterID, "endpoint_cluster_name": req.EndpointClusterName,
		"endpoint_deployment_name": req.EndpointDeploymentName, "model_service_group_id": req.ModelServiceGroupID,
		"trace_dataset": req.TraceDataset, "trace_path": req.TracePath} {
		if v != nil && len(*v) > maxFieldLength {
			errs = append(errs, field(fmt.Sprintf("at most %d characters", maxFieldLength), "string_too_long", name))
		}
	}
	if req.BackendOptions != nil {
		if raw, err := json.Marshal(req.BackendOptions); err != nil || len(raw) > maxBackendOptionsBytes {
			errs = append(errs, field(fmt.Sprintf("at most %d bytes of JSON", maxBackendOptionsBytes), "too_long", "backend_options"))
		}
	}
	for _, b := range []struct {
		name   string
		v      *float64
		lo, hi float64
		open   bool // lo itself is refused
	}{
		{"duration_seconds", req.DurationSeconds, 0, maxDurationSeconds, true},
		{"scale_factor", req.ScaleFactor, minScaleFactor, maxScaleFactor, false},
		{"trace_timeout_seconds", req.TraceTimeoutSeconds, 0, maxDurationSeconds, true},
		{"trace_start_seconds", req.TraceStartSeconds, 0, maxTraceSeconds, false},
		{"trace_end_seconds", req.TraceEndSeconds, 0, maxTraceSeconds, false},
	} {
		if b.v == nil {
			continue
		}
		v := *b.v
		if math.IsNaN(v) || v < b.lo || (b.open && v == b.lo) || v > b.hi {
			lo := "at least"
			if b.open {
				lo = "greater than"
			}
			errs = append(errs, field(fmt.Sprintf("must be a number %s %g and at most %g", lo, b.lo, b.hi), "range", b.name))
		}
	}
	if req.EndpointURL != nil && !req.boundToExecution() {
		if _, err := validateEndpoint("endpoint_url", *req.EndpointURL); err != nil {
			var pe *problem.Error
			if errors.As(err, &pe) {
				errs = append(errs, pe.Detail.([]problem.FieldError)...)
			}
		}
	}
	if len(errs) > 0 {
		return problem.Validation(errs...)
	}
	return nil
}

// buildTask turns a validated request into a queued task (400 for semantic problems).
func (a *API) buildTask(ctx context.Context, req *CreateTaskRequest) (*simtask.Task, error) {
	if err := req.validateShape(); err != nil {
		return nil, err
	}
	switch {
	case req.ModelServiceGroupID != nil:
		if err := a.bindModelService(ctx, req); err != nil {
			return nil, err
		}
	case req.boundToExecution():
		if err := a.bindExecution(ctx, req); err != nil {
			return nil, err
		}
	}
	backendName := "trace-replayer"
	if req.Backend != nil {
		backendName = *req.Backend
	}
	var backend *Backend
	for _, b := range a.catalogue.backends(ctx) {
		if b.Name == backendName {
			backend = &b
		}
	}
	switch {
	case backend == nil:
		return nil, problem.New(problem.CodeBadRequest, "unknown backend %q; GET /api/simulation/backends lists them", backendName)
	case !backend.Available:
		return nil, problem.New(problem.CodeBadRequest, "backend %q is not available: %s", backendName, str(backend.UnavailableReason))
	}
	d, err := a.datasetOf(req)
	if err != nil {
		return nil, err
	}
	if *req.Scenario != d.Scenario {
		return nil, problem.New(problem.CodeBadRequest, "dataset %q belongs to scenario %q, not %q", d.Name, d.Scenario, *req.Scenario)
	}
	// Every backend needs the format's parser (the timeline below reads the trace): while it is
	// being built or compiling, the answer is a 503 naming it.
	if err := pending(a.catalogue.Parsers, d.TraceFormat); err != nil {
		return nil, err
	}
	caps, ok := backend.Capabilities.TraceFormatCapabilities[d.TraceFormat]
	if !ok {
		return nil, problem.New(problem.CodeBadRequest, "backend %q cannot replay the %s format", backendName, d.TraceFormat)
	}
	if downloaded, _ := a.downloader.Downloaded(d); !downloaded {
		return nil, problem.New(problem.CodeBadRequest, "trace dataset %q is not downloaded; POST /api/simulation/trace-datasets/download first", d.Name)
	}
	scale := 1.0
	if req.ScaleFactor != nil {
		scale = *req.ScaleFactor
	}
	if err := checkBackendOptions(req.BackendOptions); err != nil {
		return nil, err
	}
	if scale != 1 && !caps.SupportsScaleFactor {
		return nil, problem.New(problem.CodeBadRequest, "the %s format does not support a scale factor other than 1", d.TraceFormat)
	}
	start := 0.0
	if req.TraceStartSeconds != nil {
		start = *req.TraceStartSeconds
	}
	if (start != 0 || req.TraceEndSeconds != nil) && !caps.SupportsTraceRange {
		return nil, problem.New(problem.CodeBadRequest, "the %s format does not support a trace range", d.TraceFormat)
	}
	ix, err := a.timelines.Get(ctx, d, a.downloader.Path(d))
	if err != nil {
		return nil, problem.Wrap(problem.CodeBadRequest, err, a.scrubPaths(fmt.Sprintf("trace dataset %q could not be parsed: %v", d.Name, err)))
	}
	duration := float64(defaultDurationSeconds)
	if req.DurationSeconds != nil {
		duration = *req.DurationSeconds
	}
	if req.TraceEndSeconds != nil {
		end := *req.TraceEndSeconds
		if !(start < end) || end > ix.Duration+1e-6 {
			return nil, problem.New(problem.CodeBadRequest, "the trace range must satisfy 0 <= start < end <= %g seconds", ix.Duration)
		}
		duration = max(1, math.Ceil((end-start)/scale))
		if duration > maxDurationSeconds {
			return nil, problem.New(problem.CodeBadRequest, "the trace range at scale factor %g lasts %g seconds; at most %d are allowed (raise scale_factor or shorten the range)",
				scale, duration, maxDurationSeconds)
		}
	} else if start >= ix.Duration && ix.Duration > 0 {
		return nil, problem.New(problem.CodeBadRequest, "trace_start_seconds must be below the trace's %g seconds", ix.Duration)
	}
	// A deployment's endpoint comes from the inventory (the deployer or the Model Service's
	// health probes vouch for it); only a user's URL is probed (spec: endpoint_mode !=
	// "deployment").
	if str(req.EndpointMode) != endpointModeDeployment {
		if err := a.probeEndpoint(ctx, *req.EndpointURL, str(req.APIKey), *req.ModelName); err != nil {
			return nil, err
		}
	}
	id := simtask.NewID()
	name := str(req.Name)
	if strings.TrimSpace(name) == "" {
		name = "Trace simulation"
	}
	mode := "external"
	if req.EndpointMode != nil {
		mode = *req.EndpointMode
	}
	options := req.BackendOptions
	if options == nil {
		options = map[string]any{}
	}
	t := &simtask.Task{
		ID: id, Name: name, Description: req.Description, Scenario: *req.Scenario, Status: simtask.StatusQueued,
		EndpointMode: mode, EndpointNamespace: req.EndpointNamespace, EndpointService: req.EndpointService,
		EndpointDeploymentExecutionID: req.EndpointDeploymentExecutionID, EndpointClusterID: req.EndpointClusterID,
		EndpointClusterName: req.EndpointClusterName, EndpointDeploymentName: req.EndpointDeploymentName,
		EndpointURL: *req.EndpointURL, ModelName: *req.ModelName,
		Simulation: simtask.Simulation{Backend: backendName, BackendOptions: options, DurationSeconds: duration,
			Stream: req.Stream == nil || *req.Stream, GracePeriodSeconds: defaultGraceSeconds},
		Prompt: simtask.Prompt{Type: "trace", Dataset: simtask.DatasetRef{Name: d.Name, Scenario: d.Scenario},
			Trace: simtask.Trace{Path: a.downloader.Path(d), Format: d.TraceFormat,
				FixedSchedule: req.FixedSchedule == nil || *req.FixedSchedule, TimeoutSeconds: defaultTimeoutSeconds,
				SynthesisSpeedupRatio: scale, StartSeconds: start, EndSeconds: req.TraceEndSeconds}},
		TaskDir: a.tasks.TaskDir(id), ConfigurationIDs: []string{}, ProgressMessage: "Queued", Logs: []string{},
		CreatedAt: simtask.Now(),
	}
	if req.TraceTimeoutSeconds != nil {
		t.Prompt.Trace.TimeoutSeconds = *req.TraceTimeoutSeconds
	}
	return t, nil
}

func (a *API) datasetOf(req *CreateTaskRequest) (Dataset, error) {
	if req.TraceDataset != nil {
		d, ok := a.catalogue.find(*req.TraceDataset)
		if !ok {
			return Dataset{}, problem.New(problem.CodeBadRequest, "%s", a.catalogue.unknown(*req.TraceDataset))
		}
		if req.TracePath != nil && !a.samePath(*req.TracePath, d) {
			return Dataset{}, problem.New(problem.CodeBadRequest, "trace_path %q is not the file of dataset %q (datasets/%s)", *req.TracePath, d.Name, d.Filename)
		}
		return d, nil
	}
	for _, d := range a.catalogue.all() {
		if a.samePath(*req.TracePath, d) {
			return d, nil
		}
	}
	return Dataset{}, problem.New(problem.CodeBadRequest, "trace_path %q is not a registered dataset of the datasets dir", *req.TracePath)
}

// samePath accepts the dataset's absolute path or its file name relative to the datasets dir.
func (a *API) samePath(p string, d Dataset) bool {
	if !filepath.IsAbs(p) {
		p = filepath.Join(a.downloader.Root, p)
	}
	return filepath.Clean(p) == a.downloader.Path(d)
}

// probeEndpoint checks, before anything is saved, that the endpoint answers its model list
// with this key and serves the model.
func (a *API) probeEndpoint(ctx context.Context, endpoint, key, model string) error {
	models, err := DiscoverModels(ctx, a.deps.Egress, endpoint, key)
	if err != nil {
		return err
	}
	if !slices.Contains(models, model) {
		return problem.New(problem.CodeBadRequest, "the endpoint does not serve model %q (it serves %s)", model, strings.Join(models, ", "))
	}
	return nil
}

// enqueue stores a task and announces it; the event id is derived from the task id, so a retried
// send is deduplicated by the runners.
func (a *API) enqueue(ctx context.Context, t *simtask.Task, apiKey string) error {
	if err := a.tasks.Create(ctx, t, apiKey); err != nil {
		if errors.Is(err, simtask.ErrNoSealer) {
			return problem.Wrap(problem.CodeUnavailable, err, "")
		}
		return err
	}
	a.tasks.Logf(ctx, t.ID, "Queued for %s", t.Simulation.Backend)
	err := a.deps.Events.Send(ctx, events.TypeTaskQueued, t.ID+"/queued", t.ID,
		events.TaskQueued{TaskID: t.ID, Backend: t.Simulation.Backend})
	if err != nil {
		// The task is saved and queued: runners also sweep the queue, so it still runs.
		a.deps.Log.Warnw("task queued but its event was not delivered", "task", t.ID, "error", err)
	}
	return nil
}

func (a *API) createTask(w http.ResponseWriter, r *http.Request) error {
	var req CreateTaskRequest
	if err := fn.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	t, err := a.buildTask(r.Context(), &req)
	if err != nil {
		return err
	}
	if err := a.enqueue(r.Context(), t, str(req.APIKey)); err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusAccepted, map[string]any{"task_id": t.ID, "status": t.Status, "task": a.view(t)})
	return nil
}

func (a *API) getTask(w http.ResponseWriter, r *http.Request) error {
	t, err := a.loadTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, a.view(t))
	return nil
}

func (a *API) loadTask(ctx context.Context, id string) (*simtask.Task, error) {
	if !validTaskID(id) {
		return nil, problem.New(problem.CodeNotFound, "no simulation task %q", id)
	}
	t, err := a.tasks.Get(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		return nil, problem.New(problem.CodeNotFound, "no simulation task %q", id)
	}
	return t, err
}

func validTaskID(id string) bool {
	if len(id) != 8 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (a *API) stopTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, err := a.loadTask(r.Context(), id)
	if err != nil {
		return err
	}
	switch t.Status {
	case simtask.StatusQueued:
		_, err = a.tasks.Transition(r.Context(), id, []string{simtask.StatusQueued}, simtask.StatusCancelled, state.Fence{},
			func(t *simtask.Task) error {
				t.CompletedAt, t.ProgressMessage = simtask.Now(), "Cancelled before it started"
				return nil
			})
		if errors.Is(err, state.ErrInvalidTransition) { // a runner took it meanwhile: ask it to stop
			return a.stopTask(w, r)
		}
	case simtask.StatusRunning:
		_, err = a.tasks.Transition(r.Context(), id, []string{simtask.StatusRunning}, simtask.StatusRunning, state.Fence{},
			func(t *simtask.Task) error {
				t.Internal.CancelRequested, t.ProgressMessage = true, "Cancelling"
				return nil
			})
	default:
		return problem.New(problem.CodeConflict, "simulation task %s is already %s", id, t.Status)
	}
	if err != nil {
		return err
	}
	a.tasks.Logf(r.Context(), id, "Stop requested")
	fn.WriteJSON(w, http.StatusOK, map[string]string{"task_id": id, "status": simtask.StatusCancelling})
	return nil
}

func (a *API) deleteTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, err := a.loadTask(r.Context(), id)
	if err != nil {
		return err
	}
	if simtask.Active(t.Status) {
		return problem.New(problem.CodeConflict, "simulation task %s is %s; stop it before deleting it", id, t.Status)
	}
	rec, err := a.deps.Store.Get(r.Context(), simtask.Kind, id)
	if err != nil {
		return err
	}
	if err := a.tasks.Delete(r.Context(), id, rec.Version); err != nil {
		if errors.Is(err, state.ErrVersionConflict) {
			return problem.New(problem.CodeConflict, "simulation task %s changed while deleting; try again", id)
		}
		return err
	}
	fn.WriteJSON(w, http.StatusOK, map[string]string{"task_id": id, "status": "deleted"})
	return nil
}

func (a *API) rerunTask(w http.ResponseWriter, r *http.Request) error {
	var over RerunRequest
	if err := fn.DecodeJSON(r, &over, true); err != nil {
		return err
	}
	old, err := a.loadTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	var service *serviceTarget
	if over.ModelServiceGroupID != nil { // preferred over endpoint_deployment_execution_id
		target, err := a.resolveModelService(r.Context(), *over.ModelServiceGroupID, str(over.APIKey))
		if err != nil {
			return err
		}
		service = &target
	}
	// The stored key goes only to the endpoint it was given for: a rerun elsewhere needs its
	// own key (or runs without one).
	key := str(over.APIKey)
	if service != nil {
		key = service.apiKey
	} else if over.APIKey == nil && (over.EndpointURL == nil || sameEndpoint(*over.EndpointURL, old.EndpointURL)) {
		if key, err = a.tasks.APIKey(old); err != nil {
			return problem.Wrap(problem.CodeConflict, err, "the original task's API key cannot be opened; pass api_key")
		}
	}
	t := *old
	t.ID = simtask.NewID()
	if over.EndpointURL != nil {
		if _, err := validateEndpoint("endpoint_url", *over.EndpointURL); err != nil {
			return err
		}
		t.EndpointURL = *over.EndpointURL
	}
	for dst, src := range map[**string]*string{&t.EndpointDeploymentExecutionID: over.EndpointDeploymentExecutionID,
		&t.EndpointClusterID: over.EndpointClusterID, &t.EndpointClusterName: over.EndpointClusterName,
		&t.EndpointDeploymentName: over.EndpointDeploymentName} {
		if src != nil {
			*dst = src
		}
	}
	switch {
	case service != nil:
		t.EndpointMode, t.EndpointURL, t.ModelName, t.EndpointDeploymentExecutionID = endpointModeDeployment, service.endpoint, service.model, &service.executionID
	case t.EndpointMode == endpointModeDeployment && t.EndpointDeploymentExecutionID != nil:
		// Resolved again: the execution (the old one or the override) may be gone or elsewhere.
		// The old task's key goes only to the old execution.
		callerKey := key
		if old.EndpointDeploymentExecutionID == nil || *old.EndpointDeploymentExecutionID != *t.EndpointDeploymentExecutionID {
			callerKey = str(over.APIKey)
		}
		e, executionKey, err := a.executionTarget(r.Context(), *t.EndpointDeploymentExecutionID, callerKey)
		if err != nil {
			return err
		}
		if !slices.Contains(append([]string{e.Model}, e.Models...), t.ModelName) {
			t.ModelName = e.Model
		}
		t.EndpointURL, key = e.Endpoint, executionKey
	default:
		if err := a.probeEndpoint(r.Context(), t.EndpointURL, key, t.ModelName); err != nil {
			return err
		}
	}
	// Named after the task it reruns (its own id is in the answer already); a rerun of a rerun
	// keeps the first name and names its direct original.
	base, _, _ := strings.Cut(old.Name, " · rerun ")
	t.Name = base + " · rerun of " + old.ID
	t.Status, t.TaskDir, t.ProgressPercent, t.ProgressMessage = simtask.StatusQueued, a.tasks.TaskDir(t.ID), 0, "Queued"
	t.Logs, t.LogsTruncated, t.Result, t.ErrorMessage, t.ArtifactURI, t.ArtifactError = []string{}, false, nil, nil, nil, nil
	t.CreatedAt, t.StartedAt, t.ExecutionStartedAt, t.CompletedAt = simtask.Now(), nil, nil, nil
	t.OwnerPID, t.OwnerInstanceID, t.LiveSummary, t.BackendVersion = nil, nil, nil, nil
	t.ArtifactsIncomplete, t.ConfigurationIDs = false, []string{}
	t.Internal = simtask.Internal{RerunOf: old.ID}
	if err := a.enqueue(r.Context(), &t, key); err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusAccepted, map[string]any{"task_id": t.ID, "status": t.Status, "task": a.view(&t)})
	return nil
}

// sameEndpoint compares two endpoint URLs as the same origin and path.
func sameEndpoint(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimRight(ua.Path, "/") == strings.TrimRight(ub.Path, "/")
}

func scenarioNames() []string {
	names := make([]string, len(Scenarios))
	for i, s := range Scenarios {
		names[i] = s.Name
	}
	return names
}

func knownScenario(name string) bool { return slices.Contains(scenarioNames(), name) }

// listFilters maps the list route's query parameters to indexed task attributes.
var listFilters = map[string]string{"scenario": "scenario", "backend": "backend", "model": "model",
	"dataset": "dataset", "trace_format": "trace_format", "endpoint": "endpoint"}

func (a *API) listTasks(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	query := state.Query{Kind: simtask.Kind, Attrs: map[string]string{}, Limit: 10}
	var errs []problem.FieldError
	for param, attr := range listFilters {
		if v := q.Get(param); v != "" {
			query.Attrs[attr] = v
		}
	}
	formats := map[string]bool{}
	backends := []string{}
	for _, b := range a.catalogue.backends(r.Context()) {
		backends = append(backends, b.Name)
		for _, f := range b.Capabilities.TraceFormats {
			formats[f] = true
		}
	}
	for param, allowed := range map[string][]string{"scenario": scenarioNames(), "backend": backends,
		"trace_format": slices.Sorted(maps.Keys(formats))} {
		if v := q.Get(param); v != "" && !slices.Contains(allowed, v) {
			errs = append(errs, problem.Field("must be one of "+strings.Join(allowed, ", "), "enum", "query", param))
		}
	}
	if s := q.Get("status"); s != "" {
		for _, status := range strings.Split(s, ",") {
			if !slices.Contains(simtask.Statuses, status) {
				errs = append(errs, problem.Field("must be one of "+strings.Join(simtask.Statuses, ", "), "enum", "query", "status"))
				break
			}
			query.Status = append(query.Status, status)
		}
	}
	query.Search = strings.ToLower(strings.TrimSpace(q.Get("search")))
	for param, dst := range map[string]*time.Time{"created_after": &query.CreatedAfter, "created_before": &query.CreatedBefore} {
		if v := q.Get(param); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				errs = append(errs, problem.Field("must be an RFC 3339 timestamp", "datetime_parsing", "query", param))
			}
			*dst = t
		}
	}
	for param, dst := range map[string]*int{"offset": &query.Offset, "limit": &query.Limit} {
		if v := q.Get(param); v != "" {
			n, err := strconv.Atoi(v)
			lo, hi := 0, 1<<30
			if param == "limit" {
				lo, hi = 1, 500
			}
			if err != nil || n < lo || n > hi {
				errs = append(errs, problem.Field(fmt.Sprintf("must be an integer from %d to %d", lo, hi), "range", "query", param))
			}
			*dst = n
		}
	}
	if len(errs) > 0 {
		return problem.Validation(errs...)
	}
	page, err := a.deps.Store.List(r.Context(), query)
	if err != nil {
		return err
	}
	counts, err := a.deps.Store.Counts(r.Context(), simtask.Kind)
	if err != nil {
		return err
	}
	facets, err := a.deps.Store.Facets(r.Context(), simtask.Kind, "backend", "model", "dataset", "trace_format", "endpoint")
	if err != nil {
		return err
	}
	items := make([]simtask.Task, 0, len(page.Records))
	for _, rec := range page.Records {
		t, err := simtask.Unmarshal(rec.Doc)
		if err != nil {
			return err
		}
		t.Status = rec.Status
		items = append(items, a.view(t).ListItem())
	}
	countsOut := map[string]int{}
	for _, s := range simtask.Statuses {
		countsOut[s] = counts[s]
	}
	facet := func(name string) []string {
		if v := facets[name]; v != nil {
			return v
		}
		return []string{}
	}
	fn.WriteJSON(w, http.StatusOK, map[string]any{"tasks": items, "total": page.Total, "offset": query.Offset,
		"limit": query.Limit, "counts": countsOut, "facets": map[string][]string{"backends": facet("backend"),
			"models": facet("model"), "datasets": facet("dataset"), "trace_formats": facet("trace_format"),
			"endpoints": facet("endpoint")}})
	return nil
}
