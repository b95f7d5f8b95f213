package fn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/lensfn/lensfn/runtime/problem"
)

// MaxBodyBytes caps request bodies read by DecodeJSON.
const MaxBodyBytes = 1 << 20

// DecodeJSON reads a JSON request body into v. Unknown fields, wrong types, trailing data and
// malformed JSON are 422 with a structured detail naming the field; a body over MaxBodyBytes is
// 413. An empty body decodes as {} when allowEmpty is set (optional bodies).
func DecodeJSON(r *http.Request, v any, allowEmpty bool) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return problem.Wrap(problem.CodeBadRequest, err, "the request body could not be read")
	}
	if len(body) > MaxBodyBytes {
		return problem.New(problem.CodeTooLarge, "the request body exceeds %d bytes", MaxBodyBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return problem.Validation(problem.Field("a JSON body is required", "missing", "body"))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return problem.Validation(fieldErrorOf(err))
	}
	if dec.More() {
		return problem.Validation(problem.Field("unexpected data after the JSON value", "json_invalid", "body"))
	}
	return nil
}

func fieldErrorOf(err error) problem.FieldError {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		loc := append([]string{"body"}, strings.Split(typeErr.Field, ".")...)
		return problem.Field(fmt.Sprintf("expected %s, got %s", typeErr.Type, typeErr.Value), "type_error", loc...)
	case errors.As(err, &syntaxErr):
		return problem.Field(fmt.Sprintf("malformed JSON at byte %d", syntaxErr.Offset), "json_invalid", "body")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return problem.Field("extra fields not permitted", "extra_forbidden", "body", name)
	}
	return problem.Field(err.Error(), "json_invalid", "body")
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
// error becomes problem+json.
func Handle(h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			if slot, ok := r.Context().Value(errorSlotKey{}).(*errorSlot); ok {
				slot.err = err
			}
			problem.Write(w, r, err)
		}
	})
}
