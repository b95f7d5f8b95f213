package inferencesim

import (
	"strconv"

	"github.com/valyala/fasthttp"
)

// apiError is an OpenAI-style error: the body is
// {"error":{"message":…,"type":…,"param":…|null,"code":<status>}}.
type apiError struct {
	Status  int
	Message string
	Param   string // empty means null
}

func (e *apiError) Error() string { return e.Message }

func newError(status int, msg string) *apiError { return &apiError{Status: status, Message: msg} }

func newParamError(status int, msg, param string) *apiError {
	return &apiError{Status: status, Message: msg, Param: param}
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

func appendErrorBody(dst []byte, e *apiError) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = appendJSONString(dst, e.Message)
	dst = append(dst, `,"type":`...)
	dst = appendJSONString(dst, errorType(e.Status))
	dst = append(dst, `,"param":`...)
	if e.Param == "" {
		dst = append(dst, "null"...)
	} else {
		dst = appendJSONString(dst, e.Param)
	}
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Status), 10)
	return append(dst, "}}"...)
}

func writeError(ctx *fasthttp.RequestCtx, e *apiError) {
	ctx.Response.Header.SetContentType("application/json")
	ctx.SetStatusCode(e.Status)
	bp := getBuf()
	*bp = appendErrorBody((*bp)[:0], e)
	ctx.SetBody(*bp)
	putBuf(bp)
}
