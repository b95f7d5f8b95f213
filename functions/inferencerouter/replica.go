package inferencerouter

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math/bits"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// replica is one upstream: its base URL, in-flight count, health and the
// queue gauges last scraped from its /metrics.
type replica struct {
	index    int
	base     string
	hostPort string // host:port of base, what the KV-event topic names
	target   *url.URL
	inflight atomic.Int64
	down     atomic.Bool
	waiting  atomic.Int64 // vllm:num_requests_waiting, summed over models
	running  atomic.Int64 // vllm:num_requests_running
	client   upstream     // the replica's pooled HTTP/1.1 client
	// series bound once (metrics.bindReplica): the hot path hashes no labels for them
	inflightGauge prometheus.Gauge
	answeredOK    map[string]prometheus.Counter // by profile; read-only after New
}

func newReplica(i int, base string, cfg Config) *replica {
	u, _ := url.Parse(base) // validated by ParseConfig
	hp := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			hp += ":443"
		} else {
			hp += ":80"
		}
	}
	r := &replica{index: i, base: base, hostPort: hp, target: u}
	r.client = hostUpstream{newHostClient(r, cfg.UpstreamMaxConns, cfg.UpstreamConnWait)}
	return r
}

// load is the replica's load score: requests this router has in flight on
// it plus the queue it reports.
func (r *replica) load() int64 { return r.inflight.Load() + r.waiting.Load() }

// pool is an ordered set of replicas (all of a deployment's, or the
// prefill or decode side of a P/D one).
type pool struct {
	name     string // "", "prefill" or "decode": a metric label
	replicas []*replica
	rr       atomic.Uint64 // the balanced endpoint's round-robin cursor
}

func newPool(name string, bases []string, cfg Config) *pool {
	p := &pool{name: name}
	for i, b := range bases {
		p.replicas = append(p.replicas, newReplica(i, b, cfg))
	}
	return p
}

// upMask is the set of replicas not marked down.
func (p *pool) upMask() uint64 {
	var m uint64
	for _, r := range p.replicas {
		if !r.down.Load() {
			m |= 1 << r.index
		}
	}
	return m
}

// each calls f for every replica in mask.
func (p *pool) each(mask uint64, f func(*replica)) {
	for mask != 0 {
		i := bits.TrailingZeros64(mask)
		mask &^= 1 << i
		f(p.replicas[i])
	}
}

// roundRobin returns the next replica in mask after the cursor.
func (p *pool) roundRobin(mask uint64) *replica {
	if mask == 0 {
		return nil
	}
	n := uint64(len(p.replicas))
	start := p.rr.Add(1) - 1
	for k := uint64(0); k < n; k++ {
		i := (start + k) % n
		if mask&(1<<i) != 0 {
			return p.replicas[i]
		}
	}
	return nil
}

// watch probes down replicas' /health every healthEvery and scrapes every
// replica's /metrics every scrapeEvery (0: never) until ctx ends. A scrape
// or probe that connects marks the replica up again; a refused one marks
// it down.
func (p *pool) watch(ctx context.Context, client *http.Client, healthEvery, scrapeEvery time.Duration, onChange func(*replica, bool)) {
	var wg sync.WaitGroup
	health := time.NewTicker(healthEvery)
	defer health.Stop()
	var scrape <-chan time.Time
	if scrapeEvery > 0 {
		t := time.NewTicker(scrapeEvery)
		defer t.Stop()
		scrape = t.C
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-health.C:
			for _, r := range p.replicas {
				if r.down.Load() {
					wg.Add(1)
					go func() { defer wg.Done(); probe(ctx, client, r, onChange) }()
				}
			}
		case <-scrape:
			for _, r := range p.replicas {
				wg.Add(1)
				go func() { defer wg.Done(); scrapeQueue(ctx, client, r, onChange) }()
			}
			wg.Wait() // one round at a time: a slow replica never piles up scrapes
		}
	}
}

func probe(ctx context.Context, client *http.Client, r *replica, onChange func(*replica, bool)) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/health", nil)
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK && r.down.CompareAndSwap(true, false) {
		onChange(r, true)
	}
}

// maxScrapeBytes bounds a replica's /metrics page.
const maxScrapeBytes = 4 << 20

func scrapeQueue(ctx context.Context, client *http.Client, r *replica, onChange func(*replica, bool)) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/metrics", nil)
	resp, err := client.Do(req)
	if err != nil {
		if isConnectError(err) && r.down.CompareAndSwap(false, true) {
			onChange(r, false)
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	waiting, running, ok := parseQueueGauges(io.LimitReader(resp.Body, maxScrapeBytes))
	if ok {
		r.waiting.Store(waiting)
		r.running.Store(running)
	}
}

// parseQueueGauges sums vllm:num_requests_waiting and
// vllm:num_requests_running over their label sets in a Prometheus text page.
func parseQueueGauges(body io.Reader) (waiting, running int64, ok bool) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var w, rn float64
	for sc.Scan() {
		line := sc.Bytes()
		var dst *float64
		switch {
		case isSample(line, "vllm:num_requests_waiting"):
			dst = &w
		case isSample(line, "vllm:num_requests_running"):
			dst = &rn
		default:
			continue
		}
		// "name{labels} value [timestamp]" or "name value [timestamp]"
		rest := line
		if br := bytes.LastIndexByte(line, '}'); br >= 0 {
			rest = line[br+1:]
		} else if sp := bytes.IndexByte(line, ' '); sp >= 0 {
			rest = line[sp:]
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(string(fields[0]), 64)
		if err != nil || v < 0 {
			continue
		}
		*dst += v
		ok = true
	}
	return int64(w), int64(rn), ok
}

// isSample says whether a text-format line is a sample of metric name.
func isSample(line []byte, name string) bool {
	return len(line) > len(name) && string(line[:len(name)]) == name && (line[len(name)] == '{' || line[len(name)] == ' ')
}
