package render

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/lensfn/lensfn/runtime/jsonstr"
)

// Embeddings writes a /v1/embeddings answer: Add each input's vector in order, then Body.
type Embeddings struct {
	b      []byte
	raw    []byte // base64: the little-endian float32s of one vector
	base64 bool
	n      int
}

// NewEmbeddings sizes the answer once for inputs vectors of dims values (a float and its
// comma take at most 16 bytes, base64 needs 6 per value), so it is allocated once and not
// copied; model is the name it echoes.
func NewEmbeddings(inputs, dims int, model string, base64 bool) *Embeddings {
	e := &Embeddings{b: make([]byte, 0, inputs*(dims*16+64)+len(model)+128), base64: base64}
	if base64 {
		e.raw = make([]byte, 4*dims)
	}
	e.b = append(e.b, `{"object":"list","data":[`...)
	return e
}

// Add appends the next input's vector.
func (e *Embeddings) Add(vec []float32) {
	b := e.b
	if e.n > 0 {
		b = append(b, ',')
	}
	b = append(b, `{"object":"embedding","index":`...)
	b = strconv.AppendInt(b, int64(e.n), 10)
	b = append(b, `,"embedding":`...)
	if e.base64 {
		for j, v := range vec {
			binary.LittleEndian.PutUint32(e.raw[4*j:], math.Float32bits(v))
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, e.raw)
		b = append(b, '"')
	} else {
		b = append(b, '[')
		for j, v := range vec {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
		}
		b = append(b, ']')
	}
	e.b = append(b, '}')
	e.n++
}

// Body ends the answer with the model and the usage (promptTokens over every input).
func (e *Embeddings) Body(model string, promptTokens int) []byte {
	b := append(e.b, `],"model":`...)
	b = jsonstr.Append(b, model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(promptTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(promptTokens), 10)
	return append(b, "}}"...)
}
