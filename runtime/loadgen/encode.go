package loadgen

import (
	"math"
	"slices"
	"strconv"

	"github.com/lensfn/lensfn/runtime/jsonstr"
)

// Hand-written encoders for the two JSON documents every request costs: its body and its
// record line. encoding/json spends ~40 allocations per request on them (a map's keys are
// sorted through reflection, every map entry is copied out), and at 5,000 requests a second
// that garbage is what sets the collector's pace. Strings, whatever they hold, are
// runtime/jsonstr's (encoding/json's bytes, escapes included); each encoder covers the common
// shape of the document only and says so (ok false) for anything else (a payload, extras,
// metadata of other types, NaN), which then goes through encoding/json; the tests hold both to
// byte-identical output.

// appendJSONFloat appends f exactly as encoding/json writes a float64 ('f' format, 'e' for
// very small and very large magnitudes, without a leading zero in the exponent). ok false for
// NaN and infinities, which encoding/json refuses.
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

func appendOptionalFloat(dst []byte, f *float64) ([]byte, bool) {
	if f == nil {
		return append(dst, "null"...), true
	}
	return appendJSONFloat(dst, *f)
}

// appendRecordLine appends r as one JSON line, byte for byte what a json.Encoder with
// SetEscapeHTML(false) writes, when r holds only what the engine and the runners put there
// (plain strings, numbers, booleans, []float64 metadata). ok false: use encoding/json.
func appendRecordLine(dst []byte, r *Record) ([]byte, bool) {
	ok := true
	str := func(s string) { dst = jsonstr.Append(dst, s) }
	num := func(f float64) {
		if ok {
			dst, ok = appendJSONFloat(dst, f)
		}
	}
	opt := func(f *float64) {
		if ok {
			dst, ok = appendOptionalFloat(dst, f)
		}
	}
	dst = append(dst, `{"request_id":`...)
	dst = strconv.AppendInt(dst, r.RequestID, 10)
	if r.SessionID != "" {
		dst = append(dst, `,"session_id":`...)
		str(r.SessionID)
	}
	dst = append(dst, `,"turn":`...)
	dst = strconv.AppendInt(dst, int64(r.Turn), 10)
	dst = append(dst, `,"status_code":`...)
	if r.StatusCode == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, int64(*r.StatusCode), 10)
	}
	dst = append(dst, `,"successful":`...)
	dst = strconv.AppendBool(dst, r.Successful)
	dst = append(dst, `,"error":`...)
	if r.Error == nil {
		dst = append(dst, "null"...)
	} else {
		str(*r.Error)
	}
	dst = append(dst, `,"scheduled_at_seconds":`...)
	num(r.ScheduledAtSeconds)
	dst = append(dst, `,"started_at_seconds":`...)
	num(r.StartedAtSeconds)
	dst = append(dst, `,"first_token_at_seconds":`...)
	opt(r.FirstTokenAtSeconds)
	dst = append(dst, `,"completed_at_seconds":`...)
	num(r.CompletedAtSeconds)
	dst = append(dst, `,"latency_ms":`...)
	num(r.LatencyMs)
	dst = append(dst, `,"ttft_ms":`...)
	opt(r.TTFTMs)
	dst = append(dst, `,"tpot_ms":`...)
	opt(r.TPOTMs)
	if r.TimelineDriftMs != nil {
		dst = append(dst, `,"timeline_drift_ms":`...)
		opt(r.TimelineDriftMs)
	}
	dst = append(dst, `,"input_tokens":`...)
	num(r.InputTokens)
	dst = append(dst, `,"output_tokens":`...)
	num(r.OutputTokens)
	dst = append(dst, `,"metadata":`...)
	if !ok {
		return dst, false
	}
	dst, ok = appendMetadata(dst, r.Metadata)
	return append(dst, '}', '\n'), ok
}

// appendMetadata appends a metadata map with its keys sorted, as encoding/json does.
func appendMetadata(dst []byte, m map[string]any) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	var room [16]string
	keys := room[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	ok := true
	for n, k := range keys {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, k)
		dst = append(dst, ':')
		if dst, ok = appendValue(dst, m[k]); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendValue appends the metadata values the engine and the runners use; ok false for any
// other type.
func appendValue(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return jsonstr.Append(dst, v), true
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case float64:
		return appendJSONFloat(dst, v)
	case bool:
		return strconv.AppendBool(dst, v), true
	case []float64:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		ok := true
		for i, f := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendJSONFloat(dst, f); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// plainBody is body's output for the common request: a synthesised or literal prompt, no
// payload, extras, literal messages, tools or delta context. The keys are written in
// json.Marshal's order for a map (sorted). ok false: body builds it through encoding/json.
func (e *engine) plainBody(r *Request, i int) ([]byte, bool) {
	if len(r.Payload) > 0 || len(r.Extra) > 0 || len(e.extraBody) > 0 || len(r.Messages) > 0 || len(r.Tools) > 0 ||
		r.ContextMode == ContextDeltas {
		return nil, false
	}
	chat := e.cfg.API == APIChat
	limit := r.OutputTokens > 0
	size := 320 + len(e.cfg.Model)
	if r.Prompt != nil {
		size += len(*r.Prompt)
	} else {
		size += promptBytes(r.InputTokens, r.HashIDs, r.BlockSize)
	}
	dst := make([]byte, 0, size)
	dst = append(dst, '{')
	if limit && e.cfg.IgnoreEOS {
		dst = append(dst, `"ignore_eos":true,`...)
	}
	if limit && chat {
		dst = append(dst, `"max_completion_tokens":`...)
		dst = strconv.AppendInt(dst, int64(r.OutputTokens), 10)
		dst = append(dst, ',')
	}
	if limit {
		dst = append(dst, `"max_tokens":`...)
		dst = strconv.AppendInt(dst, int64(r.OutputTokens), 10)
		dst = append(dst, ',')
	}
	var ok bool
	if chat {
		dst = append(dst, `"messages":[{"role":`...)
		if dst, ok = e.appendPromptText(dst, r, i, true); !ok {
			return nil, false
		}
		dst = append(dst, `}],`...)
	}
	if limit && e.cfg.IgnoreEOS {
		dst = append(dst, `"min_tokens":`...)
		dst = strconv.AppendInt(dst, int64(r.OutputTokens), 10)
		dst = append(dst, ',')
	}
	dst = append(dst, `"model":`...)
	dst = jsonstr.AppendHTML(dst, e.cfg.Model)
	if !chat {
		dst = append(dst, `,"prompt":`...)
		if dst, ok = e.appendPromptText(dst, r, i, false); !ok {
			return nil, false
		}
	}
	if e.cfg.Stream {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}}`...)
	} else {
		dst = append(dst, `,"stream":false}`...)
	}
	return dst, true
}

// appendPromptText appends request i's prompt as a JSON string; asMessages writes the inside
// of promptMessages' messages from the role of the first on ("user","content":"..." or the
// system message, then the user message).
func (e *engine) appendPromptText(dst []byte, r *Request, i int, asMessages bool) ([]byte, bool) {
	if r.Prompt != nil {
		if asMessages {
			dst = append(dst, `"user","content":`...)
		}
		return jsonstr.AppendHTML(dst, *r.Prompt), true
	}
	if !asMessages || r.SystemPromptTokens <= 0 {
		if asMessages {
			dst = append(dst, `"user","content":`...)
		}
		dst = append(dst, '"')
		dst = e.synth.appendPrompt(dst, tailStream(i, r.TailKey), r.InputTokens, r.HashIDs, r.BlockSize)
		return append(dst, '"'), true
	}
	dst = append(dst, `"system","content":"`...)
	from := len(dst)
	dst = e.synth.appendPrompt(dst, tailStream(i, r.TailKey), r.InputTokens, r.HashIDs, r.BlockSize)
	cut := from + wordsPrefixLen(dst[from:], r.SystemPromptTokens)
	sysStart, userStart, end := from, cut, len(dst)
	if sysStart < cut && dst[sysStart] == ' ' {
		sysStart++ // promptMessages trims the synthesiser's leading space of each part
	}
	if userStart < end && dst[userStart] == ' ' {
		userStart++
	}
	// Rewrite the text in place as <system>","role":"user","content":"<user>: the user part
	// moves right past the separator first, then the system part left over its leading space.
	const sep = `"},{"role":"user","content":"`
	sysLen := cut - sysStart
	userAt := from + sysLen + len(sep)
	dst = slices.Grow(dst, userAt+end-userStart-len(dst))[:userAt+end-userStart]
	copy(dst[userAt:], dst[userStart:end])
	copy(dst[from:], dst[sysStart:cut])
	copy(dst[from+sysLen:], sep)
	return append(dst, '"'), true
}
