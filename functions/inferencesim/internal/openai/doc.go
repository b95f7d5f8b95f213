// Package openai is the simulator's OpenAI wire format on the way in and its common
// encoding: the request types (chat, text completions, prompts, tools, tool_choice) and
// their checks, Body (a generation request as decoded: the allocation-free fast decoder of
// fastdecode.go for the common flat shape, encoding/json otherwise, the Responses API
// request converted to a chat one), the bounds on a body's JSON shape, the error bodies
// ({"error":{"message","type","param","code"}}, the SDK's error class names), the
// append-style JSON string encoding the answers are written with (package render writes
// them), and the pooled buffers.
//
// It may import runtime/jsoncursor (the fast decoder's cursor), runtime/jsonstr (the strings of
// error bodies), the standard library and fasthttp (the simulator's server).
package openai
