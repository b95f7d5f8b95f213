package problem

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Code names a class of error. One table (codes) maps it to status, title and retry meaning.
type Code string

const (
	CodeValidation     Code = "validation_error"     // 422: the body or query does not fit the schema
	CodeBadRequest     Code = "bad_request"          // 400: well-formed, but semantically wrong
	CodeUnauthorized   Code = "unauthorized"         // 401: no valid bearer token
	CodeForbidden      Code = "forbidden"            // 403: the token lacks the scope, or Host/Origin is refused
	CodeNotFound       Code = "not_found"            // 404
	CodeConflict       Code = "conflict"             // 409: the record's state or owner forbids it
	CodeMethod         Code = "method_not_allowed"   // 405
	CodeTooLarge       Code = "payload_too_large"    // 413
	CodeUnsupportedMT  Code = "unsupported_media"    // 415
	CodeTooManyRequest Code = "too_many_requests"    // 429: try again later
	CodeInternal       Code = "internal_error"       // 500
	CodeUnavailable    Code = "service_unavailable"  // 503: try again later
	CodeUpstream       Code = "upstream_unavailable" // 502
	CodeGatewayTimeout Code = "upstream_timeout"     // 504: an upstream did not answer in time
	// CodeStarting is a 503 for work the function is still preparing on its first start (a
	// WASM module compiling): its detail, written for the caller, names what; Retry-After
	// is StartingRetryAfter.
	CodeStarting Code = "starting"
)

// StartingRetryAfter is the Retry-After (seconds) of a CodeStarting answer: a module
// compiles for seconds to tens of seconds.
const StartingRetryAfter = "5"

type codeInfo struct {
	status int
	title  string
	// retryable says whether the same work may succeed when tried again. It is the one retry
	// vocabulary: the CloudEvents receiver answers a handler's retryable code with its status
	// (the broker redelivers) and any other with 400 (never redelivered).
	retryable bool
}

var codes = map[Code]codeInfo{
	CodeValidation:     {http.StatusUnprocessableEntity, "Request validation failed", false},
	CodeBadRequest:     {http.StatusBadRequest, "Bad request", false},
	CodeUnauthorized:   {http.StatusUnauthorized, "Unauthorized", false},
	CodeForbidden:      {http.StatusForbidden, "Forbidden", false},
	CodeNotFound:       {http.StatusNotFound, "Not found", false},
	CodeConflict:       {http.StatusConflict, "Conflict", true},
	CodeMethod:         {http.StatusMethodNotAllowed, "Method not allowed", false},
	CodeTooLarge:       {http.StatusRequestEntityTooLarge, "Payload too large", false},
	CodeUnsupportedMT:  {http.StatusUnsupportedMediaType, "Unsupported media type", false},
	CodeTooManyRequest: {http.StatusTooManyRequests, "Too many requests", true},
	CodeInternal:       {http.StatusInternalServerError, "Internal server error", true},
	CodeUnavailable:    {http.StatusServiceUnavailable, "Service unavailable", true},
	CodeUpstream:       {http.StatusBadGateway, "Upstream unavailable", true},
	CodeGatewayTimeout: {http.StatusGatewayTimeout, "Upstream timed out", true},
	CodeStarting:       {http.StatusServiceUnavailable, "Starting", true},
}

// Status is the HTTP status of a code (500 for an unknown one).
func (c Code) Status() int {
	if info, ok := codes[c]; ok {
		return info.status
	}
	return http.StatusInternalServerError
}

// Retryable says whether work that failed with this code may succeed when tried again.
func (c Code) Retryable() bool { return codes[c].retryable }

// FieldError is one structured validation error carried in a 4xx detail.
type FieldError struct {
	Location []string `json:"loc"`
	Message  string   `json:"msg"`
	Type     string   `json:"type"`
}

// Error is an error with a code and a client-facing detail.
type Error struct {
	Code   Code
	Detail any   // string or []FieldError; shown to clients only for 4xx
	Err    error // the cause, for logs; never shown to clients
}

func (e *Error) Error() string {
	msg := fmt.Sprint(e.Detail)
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, msg, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with a code and a formatted detail.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Wrap attaches a code and detail to a cause.
func Wrap(code Code, err error, detail string) *Error {
	return &Error{Code: code, Detail: detail, Err: err}
}

// Validation returns a 422 carrying structured field errors.
func Validation(fields ...FieldError) *Error {
	return &Error{Code: CodeValidation, Detail: fields}
}

// Field builds a FieldError for a location such as ("body", "bins").
func Field(msg, kind string, loc ...string) FieldError {
	return FieldError{Location: loc, Message: msg, Type: kind}
}

// CodeOf returns the code carried by err, CodeInternal when none is.
func CodeOf(err error) Code {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return CodeInternal
}

// Body is the problem+json document.
type Body struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    any    `json:"detail"`
	Code      Code   `json:"code"`
	RequestID string `json:"requestId,omitempty"`
}

// TypeBase prefixes the `type` URI of every problem.
const TypeBase = "https://lensfn.dev/problems/"

// BodyFor builds the client-facing document for err. 5xx details are generic.
func BodyFor(err error, requestID string) Body {
	code := CodeOf(err)
	info, ok := codes[code]
	if !ok {
		code, info = CodeInternal, codes[CodeInternal]
	}
	b := Body{Type: TypeBase + string(code), Title: info.title, Status: info.status, Code: code, RequestID: requestID}
	var pe *Error
	// 5xx details are generic unless they describe an upstream the caller named or configured:
	// those are written for the caller (what failed and why), with no internals in them.
	if (info.status < 500 || code == CodeUpstream || code == CodeGatewayTimeout || code == CodeStarting) && errors.As(err, &pe) {
		b.Detail = pe.Detail
	} else {
		b.Detail = genericDetail(info.status)
	}
	return b
}

func genericDetail(status int) string {
	switch status {
	case http.StatusServiceUnavailable:
		return "The service is temporarily unavailable; try again later."
	case http.StatusBadGateway:
		return "An upstream service did not answer; try again later."
	}
	return "An internal error occurred; quote the request id when reporting it."
}

// Write sends err as application/problem+json.
func Write(w http.ResponseWriter, r *http.Request, err error) {
	b := BodyFor(err, RequestID(r.Context()))
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case b.Code == CodeStarting:
		w.Header().Set("Retry-After", StartingRetryAfter)
	case b.Status == http.StatusTooManyRequests || b.Status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(b.Status)
	_ = json.NewEncoder(w).Encode(b)
}

type requestIDKey struct{}

// RequestIDHeader carries the request id in and out.
const RequestIDHeader = "X-Request-ID"

// WithRequestID gives every request an id: the caller's X-Request-ID when it is sane, else a new
// one. The id is echoed in the response header and available through RequestID.
func WithRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !saneID(id) {
			id = NewRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// RequestID returns the request id stored by WithRequestID ("" outside one).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// NewRequestID returns 16 random hex characters.
func NewRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func saneID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
