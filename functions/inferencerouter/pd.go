package inferencerouter

import (
	"encoding/json"
	"time"

	"github.com/valyala/fasthttp"
)

// prefillKVParams is what vLLM's P/D proxy sends with the prefill leg.
var prefillKVParams = json.RawMessage(`{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`)

// maxPrefillResponse bounds the prefill leg's answer (one token).
const maxPrefillResponse = 1 << 20

// servePD runs a request disaggregated, as vLLM's P/D proxy does: the
// prefill leg on a prefill replica (kv_transfer_params.do_remote_decode,
// max_tokens 1, not streamed), then the decode leg on a decode replica
// with the kv_transfer_params the prefill answered, streamed or not as the
// client asked. A failed prefill answer is passed through as it is.
func (rt *Router) servePD(ctx *fasthttp.RequestCtx, path, body []byte, start time.Time) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		writeError(ctx, fasthttp.StatusBadRequest, "Failed to read and parse request body as a JSON object")
		return
	}
	prefillFields := make(map[string]json.RawMessage, len(fields)+3)
	for k, v := range fields {
		prefillFields[k] = v
	}
	prefillFields["kv_transfer_params"] = prefillKVParams
	prefillFields["stream"] = json.RawMessage("false")
	delete(prefillFields, "stream_options")
	prefillFields["max_tokens"] = json.RawMessage("1")
	if _, ok := fields["max_completion_tokens"]; ok {
		prefillFields["max_completion_tokens"] = json.RawMessage("1")
	}
	prefillBody, _ := json.Marshal(prefillFields)

	var kvParams json.RawMessage
	exclude := uint64(0)
	for kvParams == nil {
		rep := rt.pickLeastLoaded(rt.prefill, rt.prefill.upMask()&^exclude)
		if rep == nil {
			writeError(ctx, fasthttp.StatusServiceUnavailable, "no prefill replica is accepting connections")
			return
		}
		rt.metrics.decisions.WithLabelValues(string(ProfilePD), "prefill-least-load").Inc()
		ans, ok := rt.roundTrip(ctx, rt.prefill, rep, path, prefillBody, "", start)
		if !ok {
			exclude |= 1 << rep.index
			continue
		}
		if ans.resp == nil {
			return
		}
		if ans.resp.StatusCode() != fasthttp.StatusOK {
			rt.relay(ctx, ans, rt.prefill, rep, string(ProfilePD))
			return
		}
		raw, done, err := readUpstreamBody(ans.resp, maxPrefillResponse)
		rt.finish(rt.prefill, rep, ans, done)
		rt.metrics.requests.WithLabelValues(string(ProfilePD), rt.prefill.name, rep.base, "200").Inc()
		var answer struct {
			KVTransferParams json.RawMessage `json:"kv_transfer_params"`
		}
		if err != nil || json.Unmarshal(raw, &answer) != nil {
			rt.metrics.upstreamErrs.WithLabelValues(rt.prefill.name, rep.base, "transport").Inc()
			writeReplicaError(ctx, rep, fasthttp.StatusBadGateway, "the prefill replica sent an unreadable answer")
			return
		}
		kvParams = answer.KVTransferParams
		if len(kvParams) == 0 || string(kvParams) == "null" {
			// a prefill replica not in P/D mode: decode without transfer parameters
			kvParams = json.RawMessage("null")
		}
	}
	if string(kvParams) == "null" {
		delete(fields, "kv_transfer_params")
	} else {
		fields["kv_transfer_params"] = kvParams
	}
	decodeBody, _ := json.Marshal(fields)
	exclude = 0
	for {
		rep := rt.pickLeastLoaded(rt.main, rt.main.upMask()&^exclude)
		if rep == nil {
			writeError(ctx, fasthttp.StatusServiceUnavailable, "no decode replica is accepting connections")
			return
		}
		rt.metrics.decisions.WithLabelValues(string(ProfilePD), "decode-least-load").Inc()
		if rt.forward(ctx, rt.main, rep, path, decodeBody, string(ProfilePD), time.Now()) {
			return
		}
		exclude |= 1 << rep.index
	}
}
