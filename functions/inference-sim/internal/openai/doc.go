// Package openai is the simulator's OpenAI wire format: the request types (chat, text
// completions, prompts, tools, tool_choice) and their checks, the bounds on a body's JSON
// shape, the scanner of the fast request decoder, the error bodies
// ({"error":{"message","type","param","code"}}, the SDK's error class names), the
// append-style JSON encoding of the response hot path, and the pooled buffers the answers
// are written into.
//
// It may import runtime/jsoncursor (the fast decoder's cursor), the standard library and
// fasthttp (the simulator's server).
package openai
