package apiclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Error is an API's non-2xx answer, from its problem+json body (RFC 9457 as runtime/problem
// writes it) when it has one.
type Error struct {
	Status    int
	Title     string
	Detail    string
	Code      string
	RequestID string
	// Fields are the validation errors when the problem's detail is a list of them.
	Fields []FieldError
}

// FieldError is one validation error of a problem's detail list.
type FieldError struct {
	Location []any  `json:"loc"`
	Message  string `json:"msg"`
	Type     string `json:"type"`
}

// Field names the request field the error is about ("body.endpoint_url" -> "endpoint_url").
func (f FieldError) Field() string {
	var parts []string
	for _, p := range f.Location {
		s := fmt.Sprint(p)
		if len(parts) == 0 && (s == "body" || s == "query" || s == "path") {
			continue
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ".")
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Status, e.Title)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.RequestID != "" {
		b.WriteString(" (request id " + e.RequestID + ")")
	}
	return b.String()
}

// NotFound says the API answered 404: an unknown record, or a route this deployment lacks.
func (e *Error) NotFound() bool { return e.Status == http.StatusNotFound }

// As unwraps an *Error.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// ErrorOf reads a non-2xx answer's body (at most MaxErrorBody) into an *Error; the caller
// closes the body.
func ErrorOf(resp *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	e := Problem(resp.StatusCode, raw)
	if resp.StatusCode/100 == 3 {
		e.Detail = "redirect to " + resp.Header.Get("Location") + " not followed: it leaves the API's host"
	}
	return e
}

// Problem decodes a problem+json body answered with status; validation details become Fields
// and a one-line Detail. A body that is no problem keeps the status's text as title and the
// body's first line (bounded) as detail.
func Problem(status int, raw []byte) *Error {
	var p struct {
		Title     string          `json:"title"`
		Detail    json.RawMessage `json:"detail"`
		Code      string          `json:"code"`
		RequestID string          `json:"requestId"`
	}
	e := &Error{Status: status, Title: http.StatusText(status)}
	if json.Unmarshal(raw, &p) != nil {
		text, _, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
		if len(text) > 300 {
			text = text[:300] + "..."
		}
		e.Detail = text
		return e
	}
	if p.Title != "" {
		e.Title = p.Title
	}
	e.Code, e.RequestID = p.Code, p.RequestID
	var text string
	if json.Unmarshal(p.Detail, &text) == nil {
		e.Detail = text
	} else if json.Unmarshal(p.Detail, &e.Fields) == nil {
		parts := make([]string, 0, len(e.Fields))
		for _, f := range e.Fields {
			parts = append(parts, f.Field()+": "+f.Message)
		}
		e.Detail = strings.Join(parts, "; ")
	}
	return e
}
