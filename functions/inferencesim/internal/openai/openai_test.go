package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestErrorBody: the body is OpenAI's error object, the type the SDK's class for the
// status, param null unless set, and WriteError sends it with the status.
func TestErrorBody(t *testing.T) {
	for status, typ := range map[int]string{400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
		404: "NotFoundError", 422: "UnprocessableEntityError", 429: "RateLimitError", 500: "InternalServerError",
		503: "InternalServerError", 499: "APIConnectionError"} {
		var got map[string]map[string]any // {"error":{...}}, read field by field
		body := AppendErrorBody(nil, NewError(status, `bad "thing"`+"\n"))
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%d: %s is not JSON: %v", status, body, err)
		}
		e := got["error"]
		if param, ok := e["param"]; len(got) != 1 || len(e) != 4 || !ok || param != nil ||
			e["type"] != typ || e["code"] != float64(status) || e["message"] != `bad "thing"`+"\n" {
			t.Errorf("%d: %s", status, body)
		}
	}
	var ctx fasthttp.RequestCtx
	WriteError(&ctx, NewParamError(400, "temperature must be non-negative", "temperature"))
	if ctx.Response.StatusCode() != 400 || string(ctx.Response.Header.ContentType()) != "application/json" ||
		!strings.Contains(string(ctx.Response.Body()), `"param":"temperature"`) {
		t.Fatalf("WriteError: %d %s %s", ctx.Response.StatusCode(), ctx.Response.Header.ContentType(), ctx.Response.Body())
	}
}

// The simulator's strings are runtime/jsonstr's, tested against encoding/json there.
func TestAppendNumbersAndKeys(t *testing.T) {
	if got := string(AppendKey(AppendInt(nil, -12), "k")); got != `-12"k":` {
		t.Fatalf("AppendInt + AppendKey: %s", got)
	}
	if got := string(AppendFloat(nil, 0.25)); got != "0.25" {
		t.Fatalf("AppendFloat: %s", got)
	}
}

func TestCheckJSONShape(t *testing.T) {
	deep := strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth)
	if e := CheckJSONShape([]byte(deep)); e != nil {
		t.Fatalf("depth %d refused: %v", MaxJSONDepth, e)
	}
	if e := CheckJSONShape([]byte("[" + deep + "]")); e == nil || e.Status != 400 || !strings.Contains(e.Message, "nested") {
		t.Fatalf("depth %d: %v", MaxJSONDepth+1, e)
	}
	many := "[" + strings.Repeat("{},", MaxJSONContainers) + "{}]"
	if e := CheckJSONShape([]byte(many)); e == nil || !strings.Contains(e.Message, "array of more than") {
		t.Fatalf("%d objects in one array: %v", MaxJSONContainers+1, e)
	}
	// Brackets inside strings are not structure; arrays of scalars are not bounded.
	inString := `{"a":"` + strings.Repeat("[", 2*MaxJSONDepth) + `\"["}`
	scalars := "[" + strings.Repeat("1,", 2*MaxJSONContainers) + "1]"
	for _, b := range []string{inString, scalars} {
		if e := CheckJSONShape([]byte(b)); e != nil {
			t.Errorf("%.40s...: %v", b, e)
		}
	}
}

func TestCountArrayItems(t *testing.T) {
	for raw, want := range map[string]int{`[]`: 0, `[ ]`: 0, `["a"]`: 1, `["a,b",["c","d"],{"e":[1,2]}]`: 3, `[1,2,3,4,5]`: 5} {
		if got := CountArrayItems([]byte(raw), 100); got != want {
			t.Errorf("CountArrayItems(%s) = %d, want %d", raw, got, want)
		}
	}
	if got := CountArrayItems([]byte(`[1,2,3,4,5,6,7,8]`), 3); got <= 3 || got > 8 {
		t.Errorf("past the limit: %d, want more than 3", got)
	}
}

func TestDecodeBody(t *testing.T) {
	var v struct{ A int }
	if e := DecodeBody([]byte(`{"A":3}`), &v); e != nil || v.A != 3 {
		t.Fatalf("valid body: %v %+v", e, v)
	}
	if e := DecodeBody([]byte(`{"A":`), &v); e == nil || e.Status != 400 || !strings.HasPrefix(e.Message, "Failed to read and parse request body, ") {
		t.Fatalf("malformed body: %v", e)
	}
	if e := DecodeBody([]byte(strings.Repeat("[", MaxJSONDepth+1)), &v); e == nil || !strings.Contains(e.Message, "nested") {
		t.Fatalf("too deep a body must fail the shape check before decoding: %v", e)
	}
}

func TestParsePrompts(t *testing.T) {
	cases := []struct {
		raw  string
		want []Prompt
	}{
		{`"hi"`, []Prompt{{Text: "hi"}}},
		{`["a","b"]`, []Prompt{{Text: "a"}, {Text: "b"}}},
		{`[1,2,3]`, []Prompt{{IDs: []int64{1, 2, 3}, IsIDs: true}}},
		{` [[1],[2,3]] `, []Prompt{{IDs: []int64{1}, IsIDs: true}, {IDs: []int64{2, 3}, IsIDs: true}}},
	}
	for _, c := range cases {
		got, err := ParsePrompts(json.RawMessage(c.raw), 4)
		if err != nil || len(got) != len(c.want) {
			t.Fatalf("%s: %+v %v", c.raw, got, err)
		}
		for i := range got {
			if got[i].Text != c.want[i].Text || got[i].IsIDs != c.want[i].IsIDs || len(got[i].IDs) != len(c.want[i].IDs) {
				t.Errorf("%s [%d]: %+v, want %+v", c.raw, i, got[i], c.want[i])
			}
		}
	}
	for raw, want := range map[string]string{``: "required", `null`: "required", `3`: "must be a string", `[]`: "must not be empty",
		`["a",1]`: "must be strings", `[[1],[]]`: "is empty", `[1,"a"]`: "only", `["a","b","c","d","e"]`: "at most 4 prompts"} {
		if _, err := ParsePrompts(json.RawMessage(raw), 4); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}

func TestPlainJSONStringAndIDsText(t *testing.T) {
	if s, ok := PlainJSONString(json.RawMessage(`"fake-model"`)); !ok || s != "fake-model" {
		t.Fatalf("plain: %q %v", s, ok)
	}
	for _, raw := range []string{`"esc\"aped"`, `"a\nb"`, "\"bad\xff\"", `x`, `""x`} {
		if _, ok := PlainJSONString(json.RawMessage(raw)); ok {
			t.Errorf("%q taken as plain", raw)
		}
	}
	if got := IDsText([]int64{1, -2, 30}); got != "1,-2,30" {
		t.Fatalf("IDsText: %q", got)
	}
}

func TestParseToolChoice(t *testing.T) {
	for raw, want := range map[string]ToolChoice{
		``: {Mode: "none"}, `"auto"`: {Mode: "auto"}, `"required"`: {Mode: "required"},
		`{"type":"function","function":{"name":"f"}}`: {Mode: "function", Name: "f"},
	} {
		if got, err := ParseToolChoice(json.RawMessage(raw), false); err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", raw, got, err, want)
		}
	}
	if got, _ := ParseToolChoice(nil, true); got.Mode != "auto" {
		t.Errorf("no tool_choice with tools: %+v, want auto", got)
	}
	for _, raw := range []string{`"sometimes"`, `{"type":"function"}`, `{"function":3}`} {
		if _, err := ParseToolChoice(json.RawMessage(raw), true); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
}

func TestCheckSamplingAndRoles(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	if e := CheckSampling(&CommonRequest{Temperature: f(0), TopP: f(1)}); e != nil {
		t.Fatalf("temperature 0, top_p 1: %v", e)
	}
	for _, c := range []CommonRequest{{Temperature: f(-0.1)}, {TopP: f(0)}, {TopP: f(1.5)}} {
		if e := CheckSampling(&c); e == nil || e.Status != 400 || e.Param == "" {
			t.Errorf("%+v accepted or no param: %v", c, e)
		}
	}
	if e := CheckRoles([]ChatMessage{{Role: "system"}, {Role: "user"}, {Role: "assistant"}, {Role: "tool"}}); e != nil {
		t.Fatalf("known roles: %v", e)
	}
	if e := CheckRoles([]ChatMessage{{Role: "user"}, {Role: "wizard"}}); e == nil || !strings.Contains(e.Message, `messages[1].role "wizard"`) {
		t.Fatalf("unknown role: %v", e)
	}
}
