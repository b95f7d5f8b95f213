// Package openai is the simulator's OpenAI wire format: the error bodies
// ({"error":{"message","type","param","code"}}, the SDK's error class names), the
// append-style JSON encoding of the response hot path, and the pooled buffers the
// answers are written into.
//
// It may import the standard library and fasthttp (the simulator's server).
package openai
