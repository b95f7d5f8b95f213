package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/runtime/jsonstr"
)

// Tools are a chat request's tools once checked: their definitions, each one's decoded
// parameter schema (nil for a tool without parameters) and tool_choice.
type Tools struct {
	Defs    []openai.ToolDef
	schemas []any
	Choice  openai.ToolChoice
}

// ToolCall is one generated function call.
type ToolCall struct {
	ID   string
	Name string
	Args string
}

// read checks a chat request's tools and tool_choice. The structural checks always
// apply, even with --skip-tool-validation: they are what keeps generation safe.
func (t *Tools) read(c *openai.ChatRequest) *openai.Error {
	if len(c.Tools) > 0 {
		schemas, e := validateTools(c.Tools)
		if e != nil {
			return e
		}
		t.schemas = schemas
	}
	tc, err := openai.ParseToolChoice(c.ToolChoice, len(c.Tools) > 0)
	if err != nil {
		return openai.NewParamError(400, err.Error(), "tool_choice")
	}
	if tc.Mode == "function" && findTool(c.Tools, tc.Name) == nil {
		return openai.NewParamError(400, "tool_choice names the function "+strconv.Quote(tc.Name)+" that is not in tools.", "tool_choice")
	}
	if tc.Mode == "required" && len(c.Tools) == 0 {
		return openai.NewParamError(400, "tool_choice \"required\" needs at least one tool.", "tool_choice")
	}
	t.Defs, t.Choice = c.Tools, tc
	return nil
}

// active reports whether generation may call a tool.
func (t *Tools) active() bool { return t.Choice.Mode != "none" && len(t.Defs) > 0 }

// pick chooses the tools a sequence calls (none: it answers in text): the named function,
// or with "auto" half the time and with "required" always one random tool, then more with
// --tool-call-extra-call-probability, at most five.
func (t *Tools) pick(rng *textgen.RNG, extraCallPercent int) []int {
	var picks []int
	switch t.Choice.Mode {
	case "function":
		for i := range t.Defs {
			if t.Defs[i].Function.Name == t.Choice.Name {
				picks = append(picks, i)
				break
			}
		}
	case "auto":
		if rng.Intn(2) == 0 {
			return nil
		}
		fallthrough
	case "required":
		picks = append(picks, rng.Intn(len(t.Defs)))
		for len(picks) < 5 && rng.Intn(100) < extraCallPercent {
			picks = append(picks, rng.Intn(len(t.Defs)))
		}
	}
	return picks
}

// generateToolCalls decides whether sequence s calls tools and, if so, fills its calls and
// tokens. It reports false when s is a text answer. The arguments count against maxTokens
// like any output: generation stops growing them past a byte budget, and the calls are cut
// at maxTokens tokens with finish_reason "length", as a model's would be.
func (r *Request) generateToolCalls(s *Sequence, maxTokens int, tc *config.ToolCallConfig) bool {
	picks := r.Tools.pick(&r.RNG, tc.ExtraCallProbability)
	if picks == nil && r.Tools.Choice.Mode == "auto" {
		return false
	}
	args := argGen{rng: &r.RNG, cfg: tc}
	start := len(r.tokens)
	budget := min(limits.MaxToolArgBytes, maxTokens*16) // a token is at least one byte
	s.Finish = FinishToolCalls
	for k, ti := range picks {
		def, schema := &r.Tools.Defs[ti], r.Tools.schemas[ti]
		arg := []byte("{}")
		if schema != nil {
			arg = args.value(nil, schema, 0, max(budget, 1))
		}
		budget -= len(arg)
		id := make([]byte, 0, 24)
		id = append(id, "chatcmpl-tool-"...)
		id = strconv.AppendUint(id, 1000000000+uint64(r.RNG.Intn(9000000000)), 10)
		call := ToolCall{ID: string(id), Name: def.Function.Name, Args: string(arg)}
		s.ToolCalls = append(s.ToolCalls, call)
		before := len(r.tokens)
		r.tokens = textgen.AppendTokens(r.tokens, call.Args)
		if len(r.tokens) == before { // keep at least one chunk per call
			r.tokens = append(r.tokens, "")
		}
		if keep := start + maxTokens; len(r.tokens) > keep {
			s.Finish = FinishLength
			if keep == before { // not one token of this call fits
				r.tokens = r.tokens[:keep]
				s.ToolCalls = s.ToolCalls[:k]
				break
			}
			clear(r.tokens[keep:])
			r.tokens = r.tokens[:keep]
			s.ToolCalls[k].Args = strings.Join(r.tokens[before:keep], "")
		}
		for range len(r.tokens) - before {
			s.ToolOfToken = append(s.ToolOfToken, k)
		}
		if s.Finish == FinishLength {
			break
		}
	}
	s.Tokens = r.tokens[start:len(r.tokens):len(r.tokens)]
	return true
}

// argGen generates tool-call arguments that fit their schemas, within --tool-call-* bounds.
type argGen struct {
	rng *textgen.RNG
	cfg *config.ToolCallConfig
}

var toolWords = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo"}

func findTool(tools []openai.ToolDef, name string) *openai.ToolDef {
	for i := range tools {
		if tools[i].Function.Name == name {
			return &tools[i]
		}
	}
	return nil
}

// validateTools checks every tool's JSON schema well enough that argument
// generation cannot fail: an array without items, an unknown type or a
// malformed schema is a 400, never a crash (the reference panics on an
// array without items). It returns the decoded schemas (nil for a tool
// without parameters), so generation does not decode them again.
func validateTools(tools []openai.ToolDef) ([]any, *openai.Error) {
	schemas := make([]any, len(tools))
	for i := range tools {
		t := &tools[i]
		if t.Type != "" && t.Type != "function" {
			return nil, openai.NewParamError(400, fmt.Sprintf("Tool validation failed: tools[%d].type must be \"function\"", i), "tools")
		}
		if t.Function.Name == "" {
			return nil, openai.NewParamError(400, fmt.Sprintf("Tool validation failed: tools[%d].function.name is required", i), "tools")
		}
		raw := bytes.TrimSpace(t.Function.Parameters)
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var schema any
		if err := json.Unmarshal(raw, &schema); err != nil {
			return nil, openai.NewParamError(400, fmt.Sprintf("Tool validation failed: tools[%d].function.parameters: %v", i, err), "tools")
		}
		if err := checkSchema(schema, "parameters", 0); err != nil {
			return nil, openai.NewParamError(400, fmt.Sprintf("Tool validation failed: %s: %v", t.Function.Name, err), "tools")
		}
		schemas[i] = schema
	}
	return schemas, nil
}

func checkSchema(s any, path string, depth int) error {
	if depth > 32 {
		return fmt.Errorf("%s: schema nested too deeply", path)
	}
	m, ok := s.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a schema must be an object", path)
	}
	if e, ok := m["enum"]; ok {
		if arr, ok := e.([]any); !ok || len(arr) == 0 {
			return fmt.Errorf("%s.enum must be a non-empty array", path)
		}
		return nil
	}
	typ, err := schemaType(m)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	switch typ {
	case "object":
		if p, ok := m["properties"]; ok {
			props, ok := p.(map[string]any)
			if !ok {
				return fmt.Errorf("%s.properties must be an object", path)
			}
			for k, v := range props {
				if err := checkSchema(v, path+"."+k, depth+1); err != nil {
					return err
				}
			}
		}
		if r, ok := m["required"]; ok {
			arr, ok := r.([]any)
			if !ok {
				return fmt.Errorf("%s.required must be an array of names", path)
			}
			for _, x := range arr {
				if _, ok := x.(string); !ok {
					return fmt.Errorf("%s.required must be an array of names", path)
				}
			}
		}
	case "array":
		items, ok := m["items"]
		if !ok {
			return fmt.Errorf("%s: an array schema needs items", path)
		}
		if err := checkSchema(items, path+"[]", depth+1); err != nil {
			return err
		}
	case "string", "integer", "number", "boolean", "null":
	default:
		return fmt.Errorf("%s: unsupported type %q", path, typ)
	}
	return nil
}

func schemaType(m map[string]any) (string, error) {
	switch t := m["type"].(type) {
	case nil:
		if _, ok := m["properties"]; ok {
			return "object", nil
		}
		return "", fmt.Errorf("missing type")
	case string:
		return t, nil
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				return s, nil
			}
		}
		return "null", nil
	}
	return "", fmt.Errorf("type must be a string")
}

// schemaBound reads a numeric bound of a schema, clamped so that the
// integer conversions and the arithmetic on it stay finite.
func schemaBound(m map[string]any, key string, def, limit float64) float64 {
	v, ok := m[key].(float64)
	if !ok {
		return def
	}
	return max(-limit, min(v, limit))
}

// value appends a value for schema s; once dst reaches limit
// bytes, arrays and objects stop growing (the caller cuts what is over).
func (a *argGen) value(dst []byte, s any, depth, limit int) []byte {
	tc := a.cfg
	m, _ := s.(map[string]any)
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		v, _ := json.Marshal(e[a.rng.Intn(len(e))])
		return append(dst, v...)
	}
	typ, _ := schemaType(m)
	switch typ {
	case "string":
		return jsonstr.Append(dst, toolWords[a.rng.Intn(len(toolWords))])
	case "integer":
		const intLimit = 1 << 52 // exact in a float64, and hi-lo+1 cannot overflow
		lo := int(math.Ceil(schemaBound(m, "minimum", float64(tc.MinIntegerParam), intLimit)))
		hi := int(math.Floor(schemaBound(m, "maximum", float64(tc.MaxIntegerParam), intLimit)))
		return strconv.AppendInt(dst, int64(a.rng.IntRange(lo, max(lo, hi))), 10)
	case "number":
		const numLimit = 1e15 // hi-lo stays finite and two decimals stay meaningful
		lo := schemaBound(m, "minimum", tc.MinNumberParam, numLimit)
		hi := schemaBound(m, "maximum", tc.MaxNumberParam, numLimit)
		v := lo + a.rng.Float64()*(max(hi, lo)-lo)
		return strconv.AppendFloat(dst, math.Round(v*100)/100, 'f', -1, 64)
	case "boolean":
		return strconv.AppendBool(dst, a.rng.Intn(2) == 1)
	case "array":
		// minItems: 1000000000 must not mean a billion items.
		lo := int(schemaBound(m, "minItems", float64(tc.MinArrayParamLength), limits.MaxToolArrayItems))
		hi := int(schemaBound(m, "maxItems", float64(tc.MaxArrayParamLength), limits.MaxToolArrayItems))
		lo = max(lo, 0)
		n := a.rng.IntRange(lo, max(lo, hi))
		dst = append(dst, '[')
		for i := 0; i < n && len(dst) < limit; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = a.value(dst, m["items"], depth+1, limit)
		}
		return append(dst, ']')
	case "object":
		props, _ := m["properties"].(map[string]any)
		required := map[string]bool{}
		if r, ok := m["required"].([]any); ok {
			for _, x := range r {
				if s, ok := x.(string); ok {
					required[s] = true
				}
			}
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic with --seed
		prob := tc.ObjectNotRequiredFieldProbability
		if depth == 0 {
			prob = tc.NotRequiredParamProbability
		}
		dst = append(dst, '{')
		first := true
		for _, k := range keys {
			if len(dst) >= limit {
				break
			}
			if !required[k] && a.rng.Intn(100) >= prob {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = jsonstr.Append(dst, k)
			dst = append(dst, ':')
			dst = a.value(dst, props[k], depth+1, limit)
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}
