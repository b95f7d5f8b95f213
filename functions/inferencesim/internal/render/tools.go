package render

import (
	"strconv"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/runtime/jsonstr"
)

// appendToolCalls appends ,"tool_calls":[…] of a complete message.
func appendToolCalls(dst []byte, calls []engine.ToolCall) []byte {
	dst = append(dst, `,"tool_calls":[`...)
	for i, c := range calls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"function":{"name":`...)
		dst = jsonstr.Append(dst, c.Name)
		dst = append(dst, `,"arguments":`...)
		dst = jsonstr.Append(dst, c.Args)
		dst = append(dst, `},"id":`...)
		dst = jsonstr.Append(dst, c.ID)
		dst = append(dst, `,"type":"function","index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendToolCallChunk streams token j of a tool-calling choice: the first
// token of each call carries its id, type and name.
func appendToolCallChunk(dst []byte, r *engine.Request, s *engine.Sequence, j int) []byte {
	k := s.ToolOfToken[j]
	first := j == 0 || s.ToolOfToken[j-1] != k
	dst = appendChunkHead(dst, r)
	dst = strconv.AppendInt(dst, int64(s.Index), 10)
	dst = append(dst, `,"finish_reason":null,"delta":{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(k), 10)
	if first {
		dst = append(dst, `,"id":`...)
		dst = jsonstr.Append(dst, s.ToolCalls[k].ID)
		dst = append(dst, `,"type":"function","function":{"name":`...)
		dst = jsonstr.Append(dst, s.ToolCalls[k].Name)
		dst = append(dst, `,"arguments":`...)
	} else {
		dst = append(dst, `,"function":{"arguments":`...)
	}
	dst = jsonstr.Append(dst, s.Tokens[j])
	dst = append(dst, "}}]}}]}"...)
	return appendSSEEnd(dst)
}
