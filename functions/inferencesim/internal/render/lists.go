package render

import (
	"strconv"

	"github.com/lensfn/lensfn/runtime/jsonstr"
)

// Tokenize appends /tokenize's answer: {"max_model_len","count","tokens","token_strs":null}.
func Tokenize(dst []byte, maxModelLen int, ids []uint32) []byte {
	dst = append(dst, `{"max_model_len":`...)
	dst = strconv.AppendInt(dst, int64(maxModelLen), 10)
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendInt(dst, int64(len(ids)), 10)
	dst = append(dst, `,"tokens":[`...)
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(id), 10)
	}
	return append(dst, `],"token_strs":null}`...)
}

// Model is one entry of /v1/models: a served name (Parent "") or a LoRA adapter.
type Model struct{ ID, Root, Parent string }

// Models appends /v1/models' list; created is the Unix time every entry reports.
func Models(dst []byte, created int64, models []Model) []byte {
	dst = append(dst, `{"object":"list","data":[`...)
	for i, m := range models {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = jsonstr.Append(dst, m.ID)
		dst = append(dst, `,"object":"model","created":`...)
		dst = strconv.AppendInt(dst, created, 10)
		dst = append(dst, `,"owned_by":"vllm","root":`...)
		dst = jsonstr.Append(dst, m.Root)
		dst = append(dst, `,"parent":`...)
		if m.Parent == "" {
			dst = append(dst, "null"...)
		} else {
			dst = jsonstr.Append(dst, m.Parent)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}
