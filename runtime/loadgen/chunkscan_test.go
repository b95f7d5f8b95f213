package loadgen

import (
	"reflect"
	"testing"
)

func TestDecodeChunk(t *testing.T) {
	zero, two, five, nine := 0, 2, 5, 9
	tests := []struct {
		name string
		data string
		want chunkInfo
		fast bool // the scanner answers without encoding/json
	}{
		{"vllm role chunk", `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","usage":null,"choices":[{"index":0,"finish_reason":null,"delta":{"role":"assistant"}}]}`,
			chunkInfo{}, true},
		{"chat content", `{"choices":[{"index":0,"delta":{"content":"Give "},"logprobs":null,"finish_reason":null}]}`,
			chunkInfo{content: true}, true},
		{"empty content is no token", `{"choices":[{"delta":{"content":""}}]}`, chunkInfo{}, true},
		{"escaped content", `{"choices":[{"delta":{"content":"\n\u00e9"}}]}`, chunkInfo{content: true}, true},
		{"reasoning", `{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, chunkInfo{content: true}, true},
		{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, chunkInfo{content: true}, true},
		{"completions text", `{"object":"text_completion","choices":[{"index":0,"text":" a","finish_reason":null}]}`,
			chunkInfo{content: true}, true},
		{"finish", `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, chunkInfo{finished: true}, true},
		{"usage", `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":0}}}`,
			chunkInfo{usage: &usage{PromptTokens: &five, CompletionTokens: &two, PromptTokensDetails: &tokenDetails{CachedTokens: &zero}}}, true},
		{"vllm error", `{"object":"error","message":"boom","type":"x","code":500}`, chunkInfo{isError: true, message: "boom"}, true},
		{"openai error", `{"error":{"message":"boom"}}`, chunkInfo{isError: true}, true},
		{"null error", `{"error":null,"choices":[]}`, chunkInfo{}, true},
		{"case-insensitive keys", `{"Choices":[{"Delta":{"Content":"x"}}],"USAGE":{"Completion_Tokens":9}}`,
			chunkInfo{content: true, usage: &usage{CompletionTokens: &nine}}, true},
		{"duplicate keys fall back", `{"choices":[{"delta":{"content":"x","content":""}}]}`, chunkInfo{}, false},
		{"float token count falls back", `{"usage":{"completion_tokens":2.0}}`, chunkInfo{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeChunk([]byte(tt.data))
			if tt.name == "float token count falls back" {
				if err == nil {
					t.Fatal("want encoding/json's error for 2.0 into an int")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if _, fast := scanChunk([]byte(tt.data)); fast != tt.fast {
				t.Errorf("fast path %t, want %t", fast, tt.fast)
			}
		})
	}
	if _, err := decodeChunk([]byte(`{"choices":[{"delta":{"content":5}}]}`)); err == nil {
		t.Error("a number as content must be an error")
	}
}

func TestDecodeChunkReplyText(t *testing.T) {
	tests := []struct {
		name, data, want string
		fast             bool
	}{
		{"chat content", `{"choices":[{"index":0,"delta":{"content":"Give "},"finish_reason":null}]}`, "Give ", true},
		{"completions text", `{"choices":[{"index":0,"text":" a b","finish_reason":null}]}`, " a b", true},
		{"escapes decoded", `{"choices":[{"delta":{"content":"x\n\u00e9\"q"}}]}`, "x\n\u00e9\"q", true},
		{"non-ASCII verbatim", `{"choices":[{"delta":{"content":"caf\u00e9 ☕"}}]}`, "café ☕", true},
		{"reasoning is not reply text", `{"choices":[{"delta":{"reasoning_content":"hmm","content":null}}]}`, "", true},
		{"tool call is not reply text", `{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}`, "", true},
		{"other choices are ignored", `{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"}}]}`, "yes", true},
		{"usage chunk", `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, "", true},
		{"fallback keeps it once", `{"choices":[{"delta":{"content":"x","Content":"y"}}]}`, "y", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, text, err := decodeChunkText([]byte(tt.data), []byte("before|"), true)
			if err != nil {
				t.Fatal(err)
			}
			if string(text) != "before|"+tt.want {
				t.Errorf("reply %q, want %q", text, "before|"+tt.want)
			}
			if _, _, fast := scanChunkText([]byte(tt.data), nil, true); fast != tt.fast {
				t.Errorf("fast path %t, want %t", fast, tt.fast)
			}
			if _, text, _ := decodeChunkText([]byte(tt.data), nil, false); len(text) != 0 {
				t.Errorf("kept %q without keep", text)
			}
		})
	}
	if _, text, err := decodeChunkText([]byte(`{"choices":[{"delta":{"content":5}}]}`), []byte("kept"), true); err == nil || string(text) != "kept" {
		t.Errorf("a bad chunk: err %v, reply %q (the earlier text must stay)", err, text)
	}
}

// FuzzChunkScanner: whenever the fast scanner answers, encoding/json accepts the chunk and
// finds the same thing, reply text included.
func FuzzChunkScanner(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":null}`,
		`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
		`{"object":"error","message":"m"}`, `{"error":{"message":"x"}}`, `{"choices":[{"text":"\u0041","finish_reason":"stop"}]}`,
		`{"choices":[{"delta":{"tool_calls":null,"reasoning":""}}]}`, `[1,2]`, `{"a":[{"b":-1.5e+3}],"c":true,"d":false}`,
		`{"choices":[{"index":1,"delta":{"content":"x"}},{"index":0,"text":"caf\u00e9 \"q\"","delta":{"content":"é"}}],"usage":{"prompt_tokens_details":{"cached_tokens":3}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := scanChunk(data)
		if !ok {
			return
		}
		slow, err := decodeChunkSlow(data)
		if err != nil {
			t.Fatalf("scanner accepted %q, encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: scanner %+v, encoding/json %+v", data, fast, slow)
		}
		_, fastText, ok := scanChunkText(data, nil, true)
		if !ok {
			return // a literal the scanner leaves to encoding/json
		}
		_, slowText, _ := decodeChunkSlowText(data, nil, true)
		if string(fastText) != string(slowText) {
			t.Fatalf("%q: scanner reply %q, encoding/json %q", data, fastText, slowText)
		}
	})
}

var vllmChunk = []byte(`{"id":"chatcmpl-e03264da-79f3-509b-b3dc-5f3fd27b79fe","model":"m","object":"chat.completion.chunk","created":1795968235,"usage":null,"choices":[{"index":0,"finish_reason":null,"delta":{"content":"Give "}}]}`)

func BenchmarkDecodeChunk(b *testing.B) {
	b.Run("scanner", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeChunk(vllmChunk); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeChunkSlow(vllmChunk); err != nil {
				b.Fatal(err)
			}
		}
	})
}
