package inferencerouter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Run parses the configuration, serves until SIGTERM/SIGINT or ctx ends,
// then drains: the listener closes, requests still arriving on open
// connections get 503, in-flight ones finish within --shutdown-timeout.
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := ParseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stopSignals()
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.ListenHost, strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	return Serve(ctx, cfg, ln, stderr)
}

// Serve runs a router for cfg on ln until ctx ends (tests call it with a
// loopback listener).
func Serve(ctx context.Context, cfg Config, ln net.Listener, stderr io.Writer) error {
	rt := New(cfg)
	stop, err := rt.Start(ctx)
	if err != nil {
		ln.Close()
		return err
	}
	defer stop()
	srv := rt.server(stderr)
	fmt.Fprintf(stderr, "inference-router: profile %s, %d replica(s), listening on %s\n", cfg.Profile,
		len(cfg.Replicas)+len(cfg.PrefillReplicas)+len(cfg.DecodeReplicas), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	rt.draining.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	// the listener closes, idle connections close, in-flight requests (and
	// their streams) finish with Connection: close, up to the timeout
	if err := srv.ShutdownWithContext(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// maxHeaderBytes bounds a request's header block (fasthttp's read buffer
// is the bound: a larger block is a 431).
const maxHeaderBytes = 16 << 10

// requestReadTimeout bounds the reading of a whole request, header and body.
const requestReadTimeout = 30 * time.Second

// server is the router's HTTP/1.1 front end; what fasthttp itself logs
// goes to stderr without the request in it (redactedLogger).
func (rt *Router) server(stderr io.Writer) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                       rt.handle,
		ErrorHandler:                  rt.serverError,
		Logger:                        redactedLogger{stderr},
		SecureErrorLogMessage:         true, // parse errors carry no header contents in the first place
		Name:                          "inference-router",
		ReadBufferSize:                maxHeaderBytes,
		WriteBufferSize:               16 << 10,
		ReadTimeout:                   requestReadTimeout,
		IdleTimeout:                   120 * time.Second,
		MaxRequestBodySize:            int(rt.cfg.MaxBodyBytes),
		DisablePreParseMultipartForm:  true, // a multipart body (audio uploads) is bytes to relay, not a form
		DisableHeaderNamesNormalizing: true, // names go to the replica as the client wrote them
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true, // a relayed answer has the replica's Content-Type or none
		NoDefaultDate:                 true, // and the replica's Date
		CloseOnShutdown:               true,
	}
}

// redactedLogger is the front end's fasthttp Logger. fasthttp logs a
// connection's failure with the error's text, and a request parse error's
// text quotes the header block (a client's Authorization among it), so
// only the format and its numeric arguments are printed: every string,
// error or address argument becomes "[redacted]".
type redactedLogger struct{ w io.Writer }

func (l redactedLogger) Printf(format string, args ...any) {
	safe := make([]any, len(args))
	for i, a := range args {
		switch a.(type) {
		case int, int32, int64, uint, uint32, uint64, float64, bool, time.Duration:
			safe[i] = a
		default:
			safe[i] = "[redacted]"
		}
	}
	fmt.Fprintf(l.w, "inference-router: http server: "+format+"\n", safe...)
}
