package inferencesim

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
)

// Logging goes through klog, as the reference's does, so its flags (--v, --log_file,
// --logtostderr, --vmodule, …) behave as the specification lists them. The simulator logs
// through log/slog; a record's level is minus its klog verbosity (logr's mapping), so these
// are the specification's verbosity levels. Records at slog.LevelInfo and above are
// written at every verbosity (the listening address, warnings about a setting that has no
// effect, errors).
const (
	levelWarn  = slog.Level(-1) // --v 1: warnings
	levelInfo  = slog.Level(-2) // --v 2: general messages (configuration, dataset)
	levelDebug = slog.Level(-4) // --v 4: each completion request, LoRA loads and unloads
	levelTrace = slog.Level(-5) // --v 5: admission and the queue
)

// klogDefaults are klog's own defaults, read before any flag is applied, so each Run starts
// from them (klog's state is the process's).
var klogDefaults = sync.OnceValue(func() map[string]string {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	defaults := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { defaults[f.Name] = f.DefValue })
	return defaults
})

// klogLogger applies the klog flags of the command line in order (after klog's defaults) and
// returns a logger that writes through klog. klog refuses what its flags refuse (a bad
// --vmodule pattern, --stderrthreshold name, …).
func klogLogger(settings []config.KlogSetting) (*slog.Logger, error) {
	defaults := klogDefaults()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range defaults {
		// A default klog prints but does not parse (--log_backtrace_at's ":0") is its unset "".
		if err := fs.Set(name, value); err != nil {
			if err := fs.Set(name, ""); err != nil {
				return nil, fmt.Errorf("klog default --%s: %w", name, err)
			}
		}
	}
	for _, s := range settings {
		if err := fs.Set(s.Name, s.Value); err != nil {
			return nil, fmt.Errorf("--%s: %w", s.Name, err)
		}
	}
	return slog.New(logr.ToSlogHandler(klog.Background())), nil
}

// logVerbosity notes which of the per-request levels are on, once: asking the handler on
// every request would cost the hot path a call into klog.
func (s *Simulator) logVerbosity() {
	s.logDebug = s.log.Enabled(context.Background(), levelDebug)
	s.logTrace = s.log.Enabled(context.Background(), levelTrace)
}

// logConfig writes the configuration's main settings at --v 2 (never the secrets).
func (s *Simulator) logConfig() {
	c := s.cfg
	s.log.Log(context.Background(), levelInfo, "configuration", "model", c.Model, "served_model_names", c.ServedModelNames,
		"mode", c.Mode, "max_model_len", c.MaxModelLen, "max_num_seqs", c.MaxNumSeqs,
		"max_waiting_queue_length", c.MaxWaitingQueueLength, "latency_calculator", c.LatencyCalculator,
		"time_to_first_token", c.Latency.TimeToFirstToken, "inter_token_latency", c.Latency.InterTokenLatency,
		"enable_kvcache", c.EnableKVCache, "kv_cache_size", c.KVCacheSize, "block_size", c.BlockSize,
		"dataset_path", c.DatasetPath, "data_parallel_size", c.DataParallelSize, "seed", c.Seed,
		"api_key_set", c.APIKey != "", "admin_token_set", c.AdminToken != "")
}

// logRequest writes, at --v 4, a generation request as decoded.
func (g *genCtx) logRequest(path []byte) {
	if !g.r.sim.logDebug {
		return
	}
	req := &g.req
	c := req.Wire.Common(req.Kind == engine.Chat)
	maxTokens := int64(-1)
	if c.MaxTokens != nil {
		maxTokens = *c.MaxTokens
	}
	g.r.sim.log.Log(context.Background(), levelDebug, "completion request", "path", string(path), "model", c.Model,
		"stream", c.Stream, "max_tokens", maxTokens, "rank", g.r.index)
}

// logAdmitted writes, at --v 5, how the scheduler admitted a request.
func (g *genCtx) logAdmitted() {
	if !g.r.sim.logTrace {
		return
	}
	adm := &g.req.Admission
	g.r.sim.log.Log(context.Background(), levelTrace, "request admitted", "id", string(g.req.ID),
		"running", adm.Running, "queued", adm.Queued, "waited", adm.Admitted-adm.Arrival, "rank", g.r.index)
}

// logRefused writes, at --v 4, a generation request answered with an error.
func (g *genCtx) logRefused(e error) {
	if g.r.sim.logDebug {
		g.r.sim.log.Log(context.Background(), levelDebug, "completion request refused", "err", e, "rank", g.r.index)
	}
}
