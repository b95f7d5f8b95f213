package inferencerouter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func (rt *Router) metricsHandler() http.Handler {
	return promhttp.HandlerFor(rt.metrics.registry, promhttp.HandlerOpts{})
}

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
	srv := &http.Server{Handler: rt, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: 64 << 10}
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
	err = srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		srv.Close()
		return nil
	}
	return err
}
