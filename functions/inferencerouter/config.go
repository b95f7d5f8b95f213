package inferencerouter

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrUsage is returned for bad flags (the message has been printed).
var ErrUsage = errors.New("usage")

// Profile names a routing policy.
type Profile string

const (
	ProfileRandom        Profile = "random"
	ProfileLoad          Profile = "load"
	ProfilePrefix        Profile = "prefix-affinity"
	ProfileOptimized     Profile = "optimized"
	ProfilePrecisePrefix Profile = "precise-prefix"
	ProfilePD            Profile = "pd"
)

var profiles = []Profile{ProfileRandom, ProfileLoad, ProfilePrefix, ProfileOptimized, ProfilePrecisePrefix, ProfilePD}

// Bounds on what the configuration may ask for.
const (
	MaxReplicas       = 64 // replica sets are uint64 masks in the prefix indexes
	maxIndexBlocks    = 1 << 24
	maxBodyBytesLimit = 256 << 20
	maxUpstreamConns  = 65536
)

// Config is the router's whole configuration, read once from flags with
// environment fallbacks (flag wins).
type Config struct {
	ListenHost      string
	Port            int
	Profile         Profile
	Replicas        []string // base URLs, e.g. http://127.0.0.1:8001
	PrefillReplicas []string // pd only
	DecodeReplicas  []string // pd only
	Seed            int64    // random tie breaks; 0: from the clock
	BlockSize       int      // tokens per KV block (the replicas' --block-size)
	CharsPerToken   int      // the approximate index hashes BlockSize*CharsPerToken bytes per block
	IndexBlocks     int      // LRU bound of each prefix index
	HashSeed        string   // the replicas' --hash-seed / PYTHONHASHSEED (precise-prefix)
	ZMQEndpoint     string   // where the router's SUB socket binds (precise-prefix)
	SaturationQueue int      // optimized: drop replicas with more waiting requests than this
	ScrapeInterval  time.Duration
	HealthInterval  time.Duration
	UpstreamTimeout time.Duration
	MaxBodyBytes    int64
	ShutdownTimeout time.Duration
	// UpstreamMaxConns bounds each replica's pooled connections; a request
	// finding them all busy waits for one (up to UpstreamConnWait), then 503
	UpstreamMaxConns int
	UpstreamConnWait time.Duration
	// StreamWriteTimeout bounds each write of a streamed answer to the
	// client: a client that stops reading for longer loses its stream, and
	// the replica connection it held is closed
	StreamWriteTimeout time.Duration
}

// ParseConfig reads flags, falling back to the environment variables named
// in each flag's usage.
func ParseConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("inference-router", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var c Config
	var profile, replicas, prefill, decode string
	var maxBodyMB int
	portDef := env("PORT", "8080")
	fs.StringVar(&c.ListenHost, "host", env("ROUTER_HOST", getenv("LENS_LISTEN_HOST")), "listen address (env ROUTER_HOST, then LENS_LISTEN_HOST; empty: all interfaces)")
	port := fs.String("port", portDef, "listen port (env PORT)")
	fs.StringVar(&profile, "profile", env("ROUTER_PROFILE", string(ProfileRandom)), "routing profile: random|load|prefix-affinity|optimized|precise-prefix|pd (env ROUTER_PROFILE)")
	fs.StringVar(&replicas, "replicas", env("ROUTER_REPLICAS", ""), "comma-separated replica base URLs (env ROUTER_REPLICAS)")
	fs.StringVar(&prefill, "prefill-replicas", env("ROUTER_PREFILL_REPLICAS", ""), "pd: comma-separated prefill replica base URLs (env ROUTER_PREFILL_REPLICAS)")
	fs.StringVar(&decode, "decode-replicas", env("ROUTER_DECODE_REPLICAS", ""), "pd: comma-separated decode replica base URLs (env ROUTER_DECODE_REPLICAS)")
	seed := fs.String("seed", env("ROUTER_SEED", "0"), "random seed for picks and tie breaks, 0: from the clock (env ROUTER_SEED)")
	blockSize := fs.String("block-size", env("ROUTER_BLOCK_SIZE", "16"), "tokens per KV block, the replicas' --block-size (env ROUTER_BLOCK_SIZE)")
	cpt := fs.String("chars-per-token", env("ROUTER_CHARS_PER_TOKEN", "4"), "prefix-affinity/optimized: bytes of prompt per token when hashing blocks (env ROUTER_CHARS_PER_TOKEN)")
	indexBlocks := fs.String("index-blocks", env("ROUTER_INDEX_BLOCKS", "1048576"), "LRU bound on each prefix index, in blocks (env ROUTER_INDEX_BLOCKS)")
	fs.StringVar(&c.HashSeed, "hash-seed", env("ROUTER_HASH_SEED", getenv("PYTHONHASHSEED")), "precise-prefix: the replicas' --hash-seed (env ROUTER_HASH_SEED, then PYTHONHASHSEED)")
	fs.StringVar(&c.ZMQEndpoint, "zmq-endpoint", env("ROUTER_ZMQ_ENDPOINT", ""), "precise-prefix: ZMQ address the KV-event SUB socket binds, e.g. tcp://127.0.0.1:5557; replicas' --zmq-endpoint (env ROUTER_ZMQ_ENDPOINT)")
	satq := fs.String("saturation-queue", env("ROUTER_SATURATION_QUEUE", "8"), "optimized: a replica with more waiting requests than this is skipped (env ROUTER_SATURATION_QUEUE)")
	scrape := fs.String("scrape-interval", env("ROUTER_SCRAPE_INTERVAL", "500ms"), "how often replicas' /metrics are scraped for queue gauges, 0: never (env ROUTER_SCRAPE_INTERVAL)")
	health := fs.String("health-interval", env("ROUTER_HEALTH_INTERVAL", "1s"), "how often a down replica is probed (env ROUTER_HEALTH_INTERVAL)")
	timeout := fs.String("upstream-timeout", env("ROUTER_UPSTREAM_TIMEOUT", "10m"), "whole-request timeout towards a replica (env ROUTER_UPSTREAM_TIMEOUT)")
	fs.IntVar(&maxBodyMB, "max-request-body-size-mb", 0, "largest request body in MiB (env ROUTER_MAX_BODY_MB, default 16)")
	maxConns := fs.String("upstream-max-conns", env("ROUTER_UPSTREAM_MAX_CONNS", "4096"), "connections to each replica at most; a request finding them all busy waits for one (env ROUTER_UPSTREAM_MAX_CONNS)")
	connWait := fs.String("upstream-conn-wait", env("ROUTER_UPSTREAM_CONN_WAIT", "5s"), "how long a request waits for a free replica connection before a 503 (env ROUTER_UPSTREAM_CONN_WAIT)")
	streamWrite := fs.String("stream-write-timeout", env("ROUTER_STREAM_WRITE_TIMEOUT", "60s"), "how long a write of a streamed answer (SSE, chunked, over 64 KiB) may wait for a client that stopped reading before its stream and replica connection are closed (env ROUTER_STREAM_WRITE_TIMEOUT)")
	shutdown := fs.String("shutdown-timeout", env("ROUTER_SHUTDOWN_TIMEOUT", "30s"), "how long in-flight requests may finish after SIGTERM (env ROUTER_SHUTDOWN_TIMEOUT)")
	if err := fs.Parse(args); err != nil {
		return c, ErrUsage
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	intIn := func(name, raw string, lo, hi int) int {
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("--%s %q: want an integer in [%d, %d]", name, raw, lo, hi))
		}
		return n
	}
	dur := func(name, raw string, lo time.Duration) time.Duration {
		d, err := time.ParseDuration(strings.TrimSpace(raw))
		if err != nil || d < lo {
			errs = append(errs, fmt.Errorf("--%s %q: want a duration >= %s", name, raw, lo))
		}
		return d
	}
	c.Port = intIn("port", *port, 1, 65535)
	c.BlockSize = intIn("block-size", *blockSize, 1, 1024)
	c.CharsPerToken = intIn("chars-per-token", *cpt, 1, 64)
	c.IndexBlocks = intIn("index-blocks", *indexBlocks, 1, maxIndexBlocks)
	c.SaturationQueue = intIn("saturation-queue", *satq, 0, 1_000_000)
	c.UpstreamMaxConns = intIn("upstream-max-conns", *maxConns, 1, maxUpstreamConns)
	s, err := strconv.ParseInt(*seed, 10, 64)
	if err != nil {
		errs = append(errs, fmt.Errorf("--seed %q: want an integer", *seed))
	}
	c.Seed = s
	c.ScrapeInterval = dur("scrape-interval", *scrape, 0)
	c.HealthInterval = dur("health-interval", *health, 10*time.Millisecond)
	c.UpstreamTimeout = dur("upstream-timeout", *timeout, time.Millisecond)
	c.ShutdownTimeout = dur("shutdown-timeout", *shutdown, 0)
	c.UpstreamConnWait = dur("upstream-conn-wait", *connWait, time.Millisecond)
	c.StreamWriteTimeout = dur("stream-write-timeout", *streamWrite, time.Millisecond)
	if maxBodyMB == 0 {
		maxBodyMB = intIn("ROUTER_MAX_BODY_MB", env("ROUTER_MAX_BODY_MB", "16"), 1, maxBodyBytesLimit>>20)
	} else if maxBodyMB < 1 || maxBodyMB > maxBodyBytesLimit>>20 {
		errs = append(errs, fmt.Errorf("--max-request-body-size-mb %d: want [1, %d]", maxBodyMB, maxBodyBytesLimit>>20))
	}
	c.MaxBodyBytes = int64(maxBodyMB) << 20

	c.Profile = Profile(profile)
	known := false
	for _, p := range profiles {
		known = known || p == c.Profile
	}
	if !known {
		errs = append(errs, fmt.Errorf("--profile %q: want one of %v", profile, profiles))
	}
	parseList := func(name, raw string) []string {
		var out []string
		for _, s := range strings.Split(raw, ",") {
			s = strings.TrimRight(strings.TrimSpace(s), "/")
			if s == "" {
				continue
			}
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
				shown := s // the flag's value, unless it may carry a credential the log must not show
				if err != nil {
					shown = "(not shown: it does not parse)"
				} else if u.User != nil || u.RawQuery != "" {
					u.User, u.RawQuery = nil, ""
					shown = u.String() + " (credentials and query removed)"
				}
				errs = append(errs, fmt.Errorf("--%s: %q is not an http(s) base URL without credentials", name, shown))
				continue
			}
			out = append(out, s)
		}
		if len(out) > MaxReplicas {
			errs = append(errs, fmt.Errorf("--%s: %d replicas, at most %d", name, len(out), MaxReplicas))
		}
		return out
	}
	c.Replicas = parseList("replicas", replicas)
	c.PrefillReplicas = parseList("prefill-replicas", prefill)
	c.DecodeReplicas = parseList("decode-replicas", decode)
	if c.Profile == ProfilePD {
		if len(c.PrefillReplicas) == 0 || len(c.DecodeReplicas) == 0 {
			errs = append(errs, errors.New("--profile pd needs --prefill-replicas and --decode-replicas"))
		}
		if len(c.Replicas) > 0 {
			errs = append(errs, errors.New("--profile pd takes --prefill-replicas and --decode-replicas, not --replicas"))
		}
	} else {
		if len(c.Replicas) == 0 {
			errs = append(errs, errors.New("--replicas: at least one replica base URL is required"))
		}
		if len(c.PrefillReplicas)+len(c.DecodeReplicas) > 0 {
			errs = append(errs, fmt.Errorf("--prefill-replicas/--decode-replicas are only for --profile pd, not %s", c.Profile))
		}
	}
	if c.Profile == ProfilePrecisePrefix && c.ZMQEndpoint == "" {
		errs = append(errs, errors.New("--profile precise-prefix needs --zmq-endpoint (the address the replicas' KV events are sent to)"))
	}
	return c, errors.Join(errs...)
}
