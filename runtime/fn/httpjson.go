package fn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// MaxJSONDepth bounds the nesting of a request body: deeper documents are 422 before they are
// decoded (or stored, and poison every client that reads them back).
const MaxJSONDepth = 32

// DecodeJSON reads a JSON request body into v. Unknown fields, wrong types, trailing data,
// nesting deeper than MaxJSONDepth and malformed JSON are 422 with a structured detail naming
// the field; a body over the route's MaxBodyBytes is 413. An empty body decodes as {} when
// allowEmpty is set (optional bodies).
func DecodeJSON(r *http.Request, v any, allowEmpty bool) error {
	limit := bodyLimit(r.Context())
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) || int64(len(body)) > limit {
		return problem.New(problem.CodeTooLarge, "the request body exceeds %d bytes", limit)
	}
	if err != nil {
		return problem.Wrap(problem.CodeBadRequest, err, "the request body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return problem.Validation(problem.Field("a JSON body is required", "missing", "body"))
	}
	if depth := JSONDepth(body); depth > MaxJSONDepth {
		return problem.Validation(problem.Field(fmt.Sprintf("JSON nested %d levels deep; at most %d are accepted", depth, MaxJSONDepth), "json_too_deep", "body"))
	}
	return problem.DecodeStrict(body, v)
}

// JSONDepth is the deepest nesting of objects and arrays in a JSON text (strings skipped), so
// depth can be refused before a decoder recurses into it.
func JSONDepth(data []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// storeProblem turns an error that says the state store cannot be reached into a 503, whatever
// code a handler wrapped it in: an outage is never the client's fault, nor permanent.
func storeProblem(err error) error {
	if err != nil && errors.Is(err, state.ErrUnavailable) && problem.CodeOf(err) != problem.CodeUnavailable {
		return problem.Wrap(problem.CodeUnavailable, err, "the state store is unavailable; try again shortly")
	}
	return err
}

// WriteJSON answers with status and v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Handle adapts a handler that returns an error: a nil error means it wrote its response, any
// error becomes problem+json; a state store that cannot be reached is a 503 with Retry-After.
func Handle(h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := storeProblem(h(w, r)); err != nil {
			if slot, ok := r.Context().Value(errorSlotKey{}).(*errorSlot); ok {
				slot.err = err
			}
			problem.Write(w, r, err)
		}
	})
}
