// Package render writes the simulator's answers in the OpenAI wire format, byte for byte as
// vLLM writes them, append-style and without reflection (the hot path): the non-streamed
// chat and text completion bodies with usage and logprobs (completions.go), their SSE chunks
// and the Responses API's object and numbered events (responses.go), tool calls whole and
// streamed (tools.go), the embeddings, tokenize and models lists. Stream is a streamed
// answer's output: Emit renders every event of an engine.Request that is due, Copy hands
// whole frames to the HTTP layer.
//
// It reads engine.Request and never changes what was generated, only the Sequences' stream
// cursors as their events go out; it does not wait (the root package paces with
// internal/pacer) and knows nothing of fasthttp.
//
// It may import functions/inferencesim/internal/engine, functions/inferencesim/internal/limits
// (the stream batch bound), functions/inferencesim/internal/openai (numbers and keys),
// runtime/jsonstr (the JSON string encoder) and the standard library.
package render
