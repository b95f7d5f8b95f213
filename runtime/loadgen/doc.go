// Package loadgen is the load-generation engine the trace replayer and the benchmark runner
// share: absolute-clock scheduling of requests (sessions and turns that wait on earlier turns,
// and subagent sessions that a parent's turns spawn and join, as in WEKA agent traces),
// delta-context sessions whose later turns resend the earlier ones (with the assistant's
// replies, bounded per session, for a KeepReplies session), OpenAI-compatible requests
// with streaming response timing (TTFT, inter-token times), prompts synthesised from hash ids
// so shared prefixes stay shared, and per-request records streamed to a JSONL artifact as they
// complete.
//
// Besides this open loop, Config.Concurrency makes a run closed loop (the benchmark runner's
// concurrency stages): exactly that many requests in flight until the schedule is done.
//
// The surface: Run(ctx, Config, []Request, Sink) sends a schedule and returns Stats, and
// RunSchedule does the same over a Schedule the engine reads by index (a trace spooled to
// disk: the engine then keeps nothing per request for a schedule without sessions and ~5 bytes
// per request with them, plus what is in flight); Record is
// one request's outcome (one JSON line); JSONLWriter is the artifact sink; Progress holds live
// counters another goroutine may read while Run works.
//
// Transport: requests go over internal/h1, a lean HTTP/1.1 client (one goroutine per request,
// pooled keep-alive connections, the request in one write, chunked decoding and SSE lines read
// in the connection's own buffer, cancellation by conn deadline: a request's timeout is its
// connection's deadline and the run's stop reaches every request in flight through one
// h1.Group, so a request costs no context of its own; see its doc.go for why not
// net/http or fasthttp), dialling through Config.Dial (an egress policy) and verifying TLS as
// net/http does (Config.TLSConfig, else the system roots). Both clients follow 307 and 308,
// keep the endpoint's key within its origin (scheme, host and port), and fail a request a 301,
// 302 or 303 would turn into a GET without its body. net/http's client stays for what the lean one does not do: a caller-supplied
// Config.Client (its own transport, HTTP/2, redirect policy) and an HTTP(S)_PROXY the
// environment names for the endpoint (used only without Config.Dial, as a proxy would connect
// past a dial policy). NewHTTPClient is that tuned net/http client and TuneTransport applies the
// same tuning to a caller's own transport.
//
// SubagentLink and ContextMode are the engine's own types (AIPerf's semantics and names), so
// the engine needs nothing of the trace formats; the replayer maps its parsed records onto
// them.
//
// Times in records are relative to the run's start (or Config.Origin, which lets back-to-back
// runs share one clock); the schedule's drift is started minus
// scheduled, and a request with a recorded position also carries its session tree's timeline
// drift. Stats.Unreleased says why requests a run never sent were not released. Config's
// SubagentTiming chooses between AIPerf's spawn-on-completion subagents and the recorded
// offsets. Synthesised prompts count one word as one token, which BPE tokenizers match only
// approximately; equal hash ids always give byte-identical text.
//
// It may import the standard library, runtime/egress (the redirect rules: origins and credential
// headers), runtime/secret, runtime/jsoncursor (its SSE chunk decoder),
// runtime/jsonstr (the strings of its hand-written bodies and record lines),
// runtime/loadgen/internal/h1 (its HTTP/1.1 client) and wasm-modules/splitmix (the run id).
package loadgen
