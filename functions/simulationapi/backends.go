package simulationapi

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/problem"
)

// Version is the trace-replayer backend's version, reported in backend listings and results.
const Version = "0.1.0"

// ScenarioView is a scenario as the API shows it.
type ScenarioView struct {
	Name              string   `json:"name"`
	DisplayName       string   `json:"display_name"`
	Description       string   `json:"description"`
	SupportedBackends []string `json:"supported_backends"`
}

// FormatCapabilities is one entry of trace_format_capabilities. TraceRange says what
// trace_start_seconds/trace_end_seconds select in the format (empty when it takes no range).
type FormatCapabilities struct {
	SupportsTraceRange  bool   `json:"supports_trace_range"`
	SupportsScaleFactor bool   `json:"supports_scale_factor"`
	TraceRange          string `json:"trace_range"`
	// State is "building" or "compiling" while the format's parser module is not ready (a
	// first start: the capabilities above are then not known yet); omitted once it is.
	State string `json:"state,omitempty"`
}

// DefaultTraceRange is what a range selects in a format whose parser does not say otherwise:
// the host's window over the file's one timeline.
const DefaultTraceRange = "requests: each request whose arrival (a delay-driven session turn: its recorded position) " +
	"falls in [start, end) on the file's timeline (seconds since its first request), released at (t - start) / scale"

// aiperfTraceRange is what AIPerf's fixed-schedule offsets select.
const aiperfTraceRange = "requests: each row whose timestamp falls in [start, end], both ends inclusive " +
	"(AIPerf's --fixed-schedule-start-offset/--fixed-schedule-end-offset)"

// SubagentTimings are the values of the trace-replayer's backend_options.subagent_timing, the
// default first (README, trace-replayer).
var SubagentTimings = []string{string(loadgen.SubagentsAtSpawn), string(loadgen.SubagentsAtRecordedOffsets)}

// Capabilities describes what a backend can do.
type Capabilities struct {
	PromptKinds               []string                      `json:"prompt_kinds"`
	ArrivalPatterns           []string                      `json:"arrival_patterns"`
	SupportsDuration          bool                          `json:"supports_duration"`
	SupportsRequestCount      bool                          `json:"supports_request_count"`
	SupportsRequestRate       bool                          `json:"supports_request_rate"`
	SupportsStreaming         bool                          `json:"supports_streaming"`
	SupportsPerRequestResults bool                          `json:"supports_per_request_results"`
	SupportsCancellation      bool                          `json:"supports_cancellation"`
	SupportsTraceRange        bool                          `json:"supports_trace_range"`
	ScaleFactorTraceFormats   []string                      `json:"scale_factor_trace_formats"`
	TraceFormatCapabilities   map[string]FormatCapabilities `json:"trace_format_capabilities"`
	AdvancedOptions           []string                      `json:"advanced_options"`
	TraceFormats              []string                      `json:"trace_formats"`
}

// Backend is one entry of GET /backends.
type Backend struct {
	Name                string         `json:"name"`
	DisplayName         string         `json:"display_name"`
	APIVersion          int            `json:"api_version"`
	Available           bool           `json:"available"`
	Version             *string        `json:"version"`
	UnavailableReason   *string        `json:"unavailable_reason"`
	Scenarios           []ScenarioView `json:"scenarios"`
	Capabilities        Capabilities   `json:"capabilities"`
	ManagedInstallation bool           `json:"managed_installation"`
}

// aiperfFormats are the formats AIPerf reads natively.
var aiperfFormats = []string{"bailian_trace", "baseten_trace", "burst_gpt_trace", "mooncake_trace", "weka_public_dataset"}

// Catalogue answers the backend, scenario and dataset listings from the loaded parser modules
// and the tools installed on this machine.
type Catalogue struct {
	Parsers    TraceParsers
	LookPath   func(string) (string, error) // exec.LookPath, replaceable in tests
	Downloader *Downloader
	// Warn, when set, is told about operator-registered datasets that cannot be used.
	Warn func(file string, err error)
}

// all is the registry plus the operator-registered datasets of the data dir.
func (c *Catalogue) all() []Dataset {
	warn := c.Warn
	if warn == nil {
		warn = func(string, error) {}
	}
	return append(append([]Dataset{}, Datasets...), localDatasets(c.Downloader.Root, warn)...)
}

// find looks a dataset up by name.
func (c *Catalogue) find(name string) (Dataset, bool) { return findIn(c.all(), name) }

// unknown is the message for a dataset name the catalogue lacks: it lists the known ones, as
// an unknown workload's message does.
func (c *Catalogue) unknown(name string) string {
	ds := c.all()
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = d.Name
	}
	return fmt.Sprintf("unknown trace dataset %q: the known datasets are %s", name, strings.Join(names, ", "))
}

func (c *Catalogue) backends(ctx context.Context) []Backend {
	formats := c.Parsers.Formats()
	replayer := Backend{Name: "trace-replayer", DisplayName: "Trace Replayer", APIVersion: 1, Available: true,
		Version: ptr(Version), Capabilities: capabilitiesFor(formats)}
	aiperfCaps := make([]TraceFormat, 0, len(aiperfFormats))
	for _, f := range aiperfFormats {
		// AIPerf reads every format itself; Baseten is the only one it time-scales (--replay-speedup).
		aiperfCaps = append(aiperfCaps, TraceFormat{Name: f, SupportsTraceRange: f != "weka_public_dataset",
			SupportsScaleFactor: f == "baseten_trace", TraceRange: aiperfTraceRange})
	}
	replayer.Capabilities.AdvancedOptions = append(replayer.Capabilities.AdvancedOptions, "subagent_timing")
	aiperf := Backend{Name: "aiperf", DisplayName: "AIPerf", APIVersion: 1, Capabilities: capabilitiesFor(aiperfCaps)}
	if path, err := c.lookPath("aiperf"); err == nil {
		aiperf.Available = true
		aiperf.Version = commandVersion(ctx, path)
	} else {
		aiperf.UnavailableReason = ptr("the aiperf command is not installed on this instance (pip install aiperf)")
	}
	all := []Backend{aiperf, replayer}
	for i := range all {
		all[i].Scenarios = scenarioViews(all[i:i+1], false)
	}
	return all
}

func (c *Catalogue) lookPath(name string) (string, error) {
	if c.LookPath != nil {
		return c.LookPath(name)
	}
	return exec.LookPath(name)
}

func commandVersion(ctx context.Context, path string) *string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return nil
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		return nil
	}
	return ptr(fields[len(fields)-1])
}

func capabilitiesFor(formats []TraceFormat) Capabilities {
	caps := Capabilities{PromptKinds: []string{"trace"}, ArrivalPatterns: []string{}, SupportsDuration: true,
		SupportsStreaming: true, SupportsPerRequestResults: true, SupportsCancellation: true,
		ScaleFactorTraceFormats: []string{}, TraceFormatCapabilities: map[string]FormatCapabilities{},
		AdvancedOptions: []string{}, TraceFormats: []string{}}
	for _, f := range formats {
		caps.TraceFormats = append(caps.TraceFormats, f.Name)
		described := ""
		if f.SupportsTraceRange {
			described = f.TraceRange
			if described == "" {
				described = DefaultTraceRange
			}
		}
		caps.TraceFormatCapabilities[f.Name] = FormatCapabilities{f.SupportsTraceRange, f.SupportsScaleFactor, described, f.State}
		caps.SupportsTraceRange = caps.SupportsTraceRange || f.SupportsTraceRange
		if f.SupportsScaleFactor {
			caps.ScaleFactorTraceFormats = append(caps.ScaleFactorTraceFormats, f.Name)
		}
	}
	sort.Strings(caps.TraceFormats)
	sort.Strings(caps.ScaleFactorTraceFormats)
	return caps
}

// supports reports whether a backend can replay some dataset of the scenario.
func supports(b Backend, scenario string) bool {
	for _, d := range Datasets {
		if d.Scenario == scenario && contains(b.Capabilities.TraceFormats, d.TraceFormat) {
			return true
		}
	}
	return false
}

// scenarioViews lists the scenarios some of the backends support; with listBackends each
// scenario names those backends (GET /scenarios), else the list is left empty as in a
// backend's own scenario list.
func scenarioViews(backends []Backend, listBackends bool) []ScenarioView {
	out := []ScenarioView{}
	for _, s := range Scenarios {
		names := []string{}
		for _, b := range backends {
			if supports(b, s.Name) {
				names = append(names, b.Name)
			}
		}
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		if !listBackends {
			names = []string{}
		}
		out = append(out, ScenarioView{Name: s.Name, DisplayName: s.DisplayName, Description: s.Description, SupportedBackends: names})
	}
	return out
}

// DatasetView is one entry of GET /trace-datasets.
type DatasetView struct {
	Name              string   `json:"name"`
	Filename          string   `json:"filename"`
	Scenario          string   `json:"scenario"`
	TraceFormat       string   `json:"trace_format"`
	Description       string   `json:"description"`
	Downloaded        bool     `json:"downloaded"`
	Path              string   `json:"path"`
	ArtifactURI       string   `json:"artifact_uri"`
	SizeBytes         *int64   `json:"size_bytes"`
	License           string   `json:"license"`
	SHA256            string   `json:"sha256"`
	SourceRepository  string   `json:"source_repository"`
	URL               string   `json:"url"`
	Files             int      `json:"files"`
	SupportedBackends []string `json:"supported_backends"`
}

func (c *Catalogue) datasets(ctx context.Context) []DatasetView {
	backends := c.backends(ctx)
	all := c.all()
	out := make([]DatasetView, 0, len(all))
	for _, d := range all {
		v := DatasetView{Name: d.Name, Filename: d.Filename, Scenario: d.Scenario, TraceFormat: d.TraceFormat,
			Description: d.Description, Path: "datasets/" + d.Filename, ArtifactURI: "artifact://dataset/" + d.Name + "/" + d.Filename,
			License: d.License, SHA256: d.SHA256(), SourceRepository: d.SourceRepository, URL: d.URL(), Files: len(d.Files),
			SupportedBackends: []string{}}
		if ok, size := c.Downloader.Downloaded(d); ok {
			v.Downloaded, v.SizeBytes = true, &size
		}
		for _, b := range backends {
			if contains(b.Capabilities.TraceFormats, d.TraceFormat) {
				v.SupportedBackends = append(v.SupportedBackends, b.Name)
			}
		}
		out = append(out, v)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// checkBackendOptions refuses (400) a subagent_timing the trace-replayer does not know.
func checkBackendOptions(options map[string]any) error {
	v, ok := options["subagent_timing"]
	if !ok {
		return nil
	}
	if s, isString := v.(string); !isString || !slices.Contains(SubagentTimings, s) {
		return problem.New(problem.CodeBadRequest, "backend_options.subagent_timing %s is not one of %s",
			fmt.Sprintf("%v", v), strings.Join(SubagentTimings, ", "))
	}
	return nil
}
