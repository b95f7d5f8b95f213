package inferencesim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/limits"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
)

// toolCall is one generated function call.
type toolCall struct {
	id   string
	name string
	args string
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

// generateToolCalls decides whether choice c calls tools and, if so,
// fills its calls and tokens. It reports false when c is a text answer.
// The arguments count against maxTokens like any output: generation stops
// growing them past a byte budget, and the calls are cut at maxTokens
// tokens with finish_reason "length", as a model's would be.
func (g *genCtx) generateToolCalls(c *choice, maxTokens int) (bool, *openai.Error) {
	tc := g.r.cfg.Tools
	var picks []int
	switch g.toolChoice.Mode {
	case "function":
		for i := range g.tools {
			if g.tools[i].Function.Name == g.toolChoice.Name {
				picks = append(picks, i)
				break
			}
		}
	case "auto":
		if g.rng.Intn(2) == 0 {
			return false, nil
		}
		fallthrough
	case "required":
		picks = append(picks, g.rng.Intn(len(g.tools)))
		for len(picks) < 5 && g.rng.Intn(100) < tc.ExtraCallProbability {
			picks = append(picks, g.rng.Intn(len(g.tools)))
		}
	}
	start := len(g.tokBuf)
	budget := min(limits.MaxToolArgBytes, maxTokens*16) // a token is at least one byte
	c.finish = finishToolCalls
	for k, ti := range picks {
		t, schema := &g.tools[ti], g.toolSchemas[ti]
		args := []byte("{}")
		if schema != nil {
			args = g.appendArgValue(nil, schema, 0, max(budget, 1))
		}
		budget -= len(args)
		id := make([]byte, 0, 24)
		id = append(id, "chatcmpl-tool-"...)
		id = strconv.AppendUint(id, 1000000000+uint64(g.rng.Intn(9000000000)), 10)
		call := toolCall{id: string(id), name: t.Function.Name, args: string(args)}
		c.toolCalls = append(c.toolCalls, call)
		before := len(g.tokBuf)
		g.tokBuf = textgen.AppendTokens(g.tokBuf, call.args)
		if len(g.tokBuf) == before { // keep at least one chunk per call
			g.tokBuf = append(g.tokBuf, "")
		}
		if keep := start + maxTokens; len(g.tokBuf) > keep {
			c.finish = finishLength
			if keep == before { // not one token of this call fits
				g.tokBuf = g.tokBuf[:keep]
				c.toolCalls = c.toolCalls[:k]
				break
			}
			clear(g.tokBuf[keep:])
			g.tokBuf = g.tokBuf[:keep]
			c.toolCalls[k].args = strings.Join(g.tokBuf[before:keep], "")
		}
		for range len(g.tokBuf) - before {
			c.toolOfToken = append(c.toolOfToken, k)
		}
		if c.finish == finishLength {
			break
		}
	}
	c.tokens = g.tokBuf[start:len(g.tokBuf):len(g.tokBuf)]
	return true, nil
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

// appendArgValue appends a value for schema s; once dst reaches limit
// bytes, arrays and objects stop growing (the caller cuts what is over).
func (g *genCtx) appendArgValue(dst []byte, s any, depth, limit int) []byte {
	tc := g.r.cfg.Tools
	m, _ := s.(map[string]any)
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		v, _ := json.Marshal(e[g.rng.Intn(len(e))])
		return append(dst, v...)
	}
	typ, _ := schemaType(m)
	switch typ {
	case "string":
		return openai.AppendJSONString(dst, toolWords[g.rng.Intn(len(toolWords))])
	case "integer":
		const intLimit = 1 << 52 // exact in a float64, and hi-lo+1 cannot overflow
		lo := int(math.Ceil(schemaBound(m, "minimum", float64(tc.MinIntegerParam), intLimit)))
		hi := int(math.Floor(schemaBound(m, "maximum", float64(tc.MaxIntegerParam), intLimit)))
		return strconv.AppendInt(dst, int64(g.rng.IntRange(lo, max(lo, hi))), 10)
	case "number":
		const numLimit = 1e15 // hi-lo stays finite and two decimals stay meaningful
		lo := schemaBound(m, "minimum", tc.MinNumberParam, numLimit)
		hi := schemaBound(m, "maximum", tc.MaxNumberParam, numLimit)
		v := lo + g.rng.Float64()*(max(hi, lo)-lo)
		return strconv.AppendFloat(dst, math.Round(v*100)/100, 'f', -1, 64)
	case "boolean":
		return strconv.AppendBool(dst, g.rng.Intn(2) == 1)
	case "array":
		// minItems: 1000000000 must not mean a billion items.
		lo := int(schemaBound(m, "minItems", float64(tc.MinArrayParamLength), limits.MaxToolArrayItems))
		hi := int(schemaBound(m, "maxItems", float64(tc.MaxArrayParamLength), limits.MaxToolArrayItems))
		lo = max(lo, 0)
		n := g.rng.IntRange(lo, max(lo, hi))
		dst = append(dst, '[')
		for i := 0; i < n && len(dst) < limit; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = g.appendArgValue(dst, m["items"], depth+1, limit)
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
			if !required[k] && g.rng.Intn(100) >= prob {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = openai.AppendJSONString(dst, k)
			dst = append(dst, ':')
			dst = g.appendArgValue(dst, props[k], depth+1, limit)
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// appendToolCalls appends ,"tool_calls":[…] of a complete message.
func appendToolCalls(dst []byte, calls []toolCall) []byte {
	dst = append(dst, `,"tool_calls":[`...)
	for i, c := range calls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"function":{"name":`...)
		dst = openai.AppendJSONString(dst, c.name)
		dst = append(dst, `,"arguments":`...)
		dst = openai.AppendJSONString(dst, c.args)
		dst = append(dst, `},"id":`...)
		dst = openai.AppendJSONString(dst, c.id)
		dst = append(dst, `,"type":"function","index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendToolCallChunk streams token j of a tool-calling choice: the first
// token of each call carries its id, type and name.
func (g *genCtx) appendToolCallChunk(dst []byte, c *choice, j int) []byte {
	k := c.toolOfToken[j]
	first := j == 0 || c.toolOfToken[j-1] != k
	dst = g.appendChunkHead(dst)
	dst = strconv.AppendInt(dst, int64(c.index), 10)
	dst = append(dst, `,"finish_reason":null,"delta":{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(k), 10)
	if first {
		dst = append(dst, `,"id":`...)
		dst = openai.AppendJSONString(dst, c.toolCalls[k].id)
		dst = append(dst, `,"type":"function","function":{"name":`...)
		dst = openai.AppendJSONString(dst, c.toolCalls[k].name)
		dst = append(dst, `,"arguments":`...)
	} else {
		dst = append(dst, `,"function":{"arguments":`...)
	}
	dst = openai.AppendJSONString(dst, c.tokens[j])
	dst = append(dst, "}}]}}]}"...)
	return appendSSEEnd(dst)
}
