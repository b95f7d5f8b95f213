package openai

import (
	"strconv"

	"github.com/lensfn/lensfn/runtime/jsonstr"
	"github.com/valyala/fasthttp"
)

// Error is an OpenAI-style error: the body is
// {"error":{"message":…,"type":…,"param":…|null,"code":<status>}}.
type Error struct {
	Status  int
	Message string
	Param   string // empty means null
}

func (e *Error) Error() string { return e.Message }

func NewError(status int, msg string) *Error { return &Error{Status: status, Message: msg} }

func NewParamError(status int, msg, param string) *Error {
	return &Error{Status: status, Message: msg, Param: param}
}

// errorType maps a status to the OpenAI SDK error class name, as the
// reference does.
func errorType(status int) string {
	switch status {
	case 400:
		return "BadRequestError"
	case 401:
		return "AuthenticationError"
	case 403:
		return "PermissionDeniedError"
	case 404:
		return "NotFoundError"
	case 422:
		return "UnprocessableEntityError"
	case 429:
		return "RateLimitError"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return "APIConnectionError"
}

func AppendErrorBody(dst []byte, e *Error) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = jsonstr.Append(dst, e.Message)
	dst = append(dst, `,"type":`...)
	dst = jsonstr.Append(dst, errorType(e.Status))
	dst = append(dst, `,"param":`...)
	if e.Param == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonstr.Append(dst, e.Param)
	}
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Status), 10)
	return append(dst, "}}"...)
}

func WriteError(ctx *fasthttp.RequestCtx, e *Error) {
	ctx.Response.Header.SetContentType("application/json")
	ctx.SetStatusCode(e.Status)
	bp := GetBuf()
	*bp = AppendErrorBody((*bp)[:0], e)
	ctx.SetBody(*bp)
	PutBuf(bp)
}
