package loadgen

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// API selects the OpenAI-compatible route a run sends to.
type API string

const (
	// APIChat sends /v1/chat/completions with messages, max_completion_tokens and max_tokens.
	APIChat API = "chat"
	// APICompletions sends /v1/completions with a prompt and max_tokens.
	APICompletions API = "completions"
)

// Config is one run's settings. The zero values of the optional fields are the defaults.
type Config struct {
	// BaseURL is the endpoint, with or without a trailing /v1 (http://host:8000 or
	// http://host:8000/v1).
	BaseURL string
	// APIKey is sent as a Bearer token; it is never logged or written to records.
	APIKey string
	Model  string
	API    API
	// Stream asks for an SSE response (with usage) and times every token; false sends a
	// plain request and records latency only.
	Stream bool
	// IgnoreEOS sends ignore_eos: true and min_tokens = the requested output length, for
	// endpoints that support them (vLLM), so output lengths match the schedule.
	IgnoreEOS bool
	// ExtraBody is a JSON object shallow-merged into every request body (a request's own
	// Extra wins over it).
	ExtraBody json.RawMessage
	// RequestTimeout bounds one request from send to the last byte; 0 means no per-request
	// limit (the run's end still bounds it).
	RequestTimeout time.Duration
	// Duration is how long the schedule runs: requests released later are not sent. 0 means
	// the whole schedule.
	Duration time.Duration
	// GracePeriod is how long requests in flight at Duration may still finish; then they are
	// cancelled and recorded as failed. Only meaningful with a Duration.
	GracePeriod time.Duration
	// Seed makes synthesised prompts and request ids reproducible.
	Seed uint64
	// RunID prefixes every X-Request-ID (<RunID>-<request id>); empty derives one from Seed.
	RunID string
	// SpinWindow is how long before a send time the dispatcher stops sleeping and spins
	// (yielding to other goroutines). 0 never spins. Go's sleeps on Linux wake up to ~1 ms
	// late, so only a window of about 1 ms removes that lateness, and at high rates it keeps a
	// core busy: on the shared 2-core benchmark box it cost ~40 % more CPU per request and made
	// drift worse, hence off by default.
	SpinWindow time.Duration
	// PrepareAhead is how many request bodies are built ahead of their send time (default 256).
	PrepareAhead int
	// GCHeadroomBytes, when > 0, lets the heap grow at least this far past the live heap
	// between garbage collections while the run lasts (the process's GC percent is raised, and
	// restored when the last such run ends; never below the GOGC in force; GOMEMLIMIT still
	// bounds the heap). Fewer collections during an open-loop stage mean fewer sends scheduled
	// inside a concurrent mark (gcpace.go). At most 1 TiB. 0 leaves the collector alone.
	GCHeadroomBytes int64
	// PromptCacheBytes bounds the memory of cached prompt blocks (default 64 MiB).
	PromptCacheBytes int
	// MaxResponseBytes caps a non-streamed response body or an error body (default 16 MiB).
	MaxResponseBytes int64
	// MaxReplyBytes caps the assistant reply text a KeepReplies session keeps, summed over its
	// turns (default 256 KiB). A session goroutine holds its history until its last turn is
	// sent, and a shared-prefix run keeps every user's session alive at once, so without a cap
	// an endpoint that ignores max_tokens could make the runner hold its whole output; 256 KiB
	// is ~50k tokens of text, more than the replies of a conversation that fits a model's
	// context. Past the cap a reply is kept cut (at a UTF-8 boundary) and its record says
	// reply_truncated; the turn itself is measured and recorded as usual.
	MaxReplyBytes int
	// InterTokenTimes adds every gap between content chunks (ms) to each record's metadata
	// as "inter_token_ms"; off by default because it makes records long.
	InterTokenTimes bool
	// Concurrency, when > 0, makes the run closed loop: arrivals and delays are ignored, and
	// exactly Concurrency requests are in flight (fewer only when fewer remain to send) until
	// every request of the schedule has completed; each is sent as soon as a slot frees, in
	// schedule order. A schedule with sessions is refused. Duration still stops new sends.
	Concurrency int
	// Client sends the requests; nil uses NewHTTPClient(). Its Timeout should be zero.
	Client *http.Client
	// Dial, when set and Client is nil, opens every connection (an egress policy's
	// DialContext, which refuses addresses outside the operator's endpoint policy, redirects
	// included); no proxy is used then.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLSConfig, when set and Client is nil, configures https connections (tests give their
	// own roots); nil verifies the server against the system roots, as net/http does.
	TLSConfig *tls.Config
	// Progress, when set, is updated live so another goroutine can report progress.
	Progress *Progress
	// SubagentTiming chooses when a subagent session starts and when the parent turn that
	// joins it is released; empty means SubagentsAtSpawn.
	SubagentTiming SubagentTiming
	// Origin, when set, is the zero of the records' times (scheduled, started, first token,
	// completed) instead of the run's own start, so a caller that sends several schedules back
	// to back (the benchmark runner's stages) keeps their records on one clock. It must not be
	// later than the run's start. Schedule offsets still count from the run's start.
	Origin time.Time
}

// SubagentTiming is how subagent sessions are placed against their parent (see Run).
type SubagentTiming string

const (
	// SubagentsAtSpawn starts a subagent session when the parent turn that spawns it completes
	// (its first turn's delay counting from there), and releases the joining turn its own delay
	// after the later of its previous turn and the last joined subagent completing. The replay
	// semantics trace-formats.md 2.5 records for AIPerf's WEKA loader.
	SubagentsAtSpawn SubagentTiming = "spawn_completion"
	// SubagentsAtRecordedOffsets keeps the recorded timeline: a subagent session's first turn is
	// released at the later of the spawning turn's completion and the spawning turn's release
	// plus the recorded offset between the two (Request.RecordedMs); the joining turn at the later
	// of its own delay after its previous turn and its JoinDelayMs (the recorded gap after the
	// end of the last subagent) after the last joined subagent completes.
	SubagentsAtRecordedOffsets SubagentTiming = "recorded_offsets"
)

const (
	defaultPrepareAhead     = 256
	defaultPromptCacheBytes = 64 << 20
	defaultMaxResponseBytes = 16 << 20
	defaultMaxReplyBytes    = 256 << 10
	maxGCHeadroomBytes      = 1 << 40
)

// String describes the config without the API key.
func (c Config) String() string {
	key := "none"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("loadgen.Config{BaseURL:%q Model:%q API:%s Stream:%t IgnoreEOS:%t Duration:%s Grace:%s Timeout:%s Seed:%d APIKey:%s}",
		c.BaseURL, c.Model, c.API, c.Stream, c.IgnoreEOS, c.Duration, c.GracePeriod, c.RequestTimeout, c.Seed, key)
}

// GoString keeps %#v from printing the key too.
func (c Config) GoString() string { return c.String() }

// endpoint checks the config and returns the URL requests are posted to.
func (c Config) endpoint() (string, error) {
	if c.BaseURL == "" {
		return "", errors.New("loadgen: base URL is required")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("loadgen: base URL %q must be an absolute http(s) URL", c.BaseURL)
	}
	if c.Model == "" {
		return "", errors.New("loadgen: model is required")
	}
	if c.Duration < 0 || c.GracePeriod < 0 || c.RequestTimeout < 0 {
		return "", errors.New("loadgen: duration, grace period and request timeout must be >= 0")
	}
	if c.PrepareAhead < 0 || c.PromptCacheBytes < 0 || c.MaxResponseBytes < 0 || c.MaxReplyBytes < 0 || c.Concurrency < 0 {
		return "", errors.New("loadgen: prepare-ahead, prompt cache, response caps and concurrency must be >= 0")
	}
	if c.GCHeadroomBytes < 0 || c.GCHeadroomBytes > maxGCHeadroomBytes {
		return "", fmt.Errorf("loadgen: GC headroom must be between 0 and %d bytes, got %d", int64(maxGCHeadroomBytes), c.GCHeadroomBytes)
	}
	switch c.SubagentTiming {
	case "", SubagentsAtSpawn, SubagentsAtRecordedOffsets:
	default:
		return "", fmt.Errorf("loadgen: subagent timing must be %q or %q, got %q", SubagentsAtSpawn, SubagentsAtRecordedOffsets, c.SubagentTiming)
	}
	if c.Client != nil && c.Client.Timeout != 0 {
		return "", errors.New("loadgen: the HTTP client must have no global timeout (use RequestTimeout)")
	}
	base := strings.TrimRight(u.String(), "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	switch c.API {
	case APIChat:
		return base + "/chat/completions", nil
	case APICompletions:
		return base + "/completions", nil
	default:
		return "", fmt.Errorf("loadgen: api must be %q or %q, got %q", APIChat, APICompletions, c.API)
	}
}

// SeedOf derives a run's Seed from its id (FNV-1a), so a run's prompts and request ids are the
// same every time it is replayed or re-read.
func SeedOf(id string) uint64 {
	var s uint64 = 1469598103934665603
	for i := 0; i < len(id); i++ {
		s = (s ^ uint64(id[i])) * 1099511628211
	}
	return s
}
