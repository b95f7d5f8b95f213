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
	srv := rt.server()
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

// server is the router's HTTP/1.1 front end.
func (rt *Router) server() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                       rt.handle,
		ErrorHandler:                  rt.serverError,
		Name:                          "inference-router",
		ReadBufferSize:                maxHeaderBytes,
		WriteBufferSize:               16 << 10,
		ReadTimeout:                   30 * time.Second, // a whole request, header and body
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
