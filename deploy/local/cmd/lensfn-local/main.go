package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
)

// modulesReady starts the line printed when the WASM modules a first start compiles are ready.
const modulesReady = "WASM modules ready"

func main() {
	// Everything the stack and its admin commands write under the data dir is private.
	syscall.Umask(0o077)
	if len(os.Args) > 1 && os.Args[1] == "token" {
		os.Exit(tokenCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	home, _ := os.UserHomeDir()
	dataDir := os.Getenv("LENS_DATA_DIR")
	if dataDir == "" {
		dataDir = filepath.Join(home, ".local", "share", "lensfn")
	}
	addr := os.Getenv("LENS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	simAddr := os.Getenv("LENS_SIM_ADDR")
	if simAddr == "" {
		simAddr = "127.0.0.1:8000"
	}
	opts := local.Options{Env: map[string]string{}, Auth: os.Getenv("LENS_AUTH"), StartPrometheus: true}
	flag.StringVar(&opts.Addr, "addr", addr, "ingress address (LENS_ADDR)")
	flag.StringVar(&opts.SimulatorAddr, "sim-addr", simAddr, "the inference simulator's address (LENS_SIM_ADDR)")
	flag.StringVar(&opts.DataDir, "data", dataDir, "data directory (LENS_DATA_DIR)")
	flag.StringVar(&opts.BinDir, "bin", "bin", "directory of the function binaries (make build)")
	flag.StringVar(&opts.ModuleDir, "modules", filepath.Join("bin", "modules"), "directory of the built-in WASM modules (make wasm)")
	flag.StringVar(&opts.ManifestDir, "manifests", filepath.Join("deploy", "knative"), "Knative manifests to run")
	flag.Parse()
	for _, name := range []string{"LENS_DATASET_MIRROR", "LENS_MODULE_DIR", "LOG_LEVEL"} {
		if v := os.Getenv(name); v != "" {
			opts.Env[name] = v
		}
	}
	logger := log.New(os.Stderr, "lensfn-local: ", log.LstdFlags)
	opts.Log = logger.Printf

	// SIGHUP (the terminal closed) drains and stops like Ctrl-C: nothing is left running.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	stack, err := local.Start(ctx, opts)
	if err != nil {
		logger.Fatal(err)
	}
	fmt.Printf("Lensfn is up.\n  API:       %s/api/simulation  (try %s/api/simulation/backends)\n", stack.APIURL, stack.APIURL)
	if endpoint, model, ok := stack.Simulator(); ok {
		fmt.Printf("  Simulator: endpoint_url %s  model_name %s\n", endpoint, model)
	}
	if _, ok := stack.FunctionURL("console"); ok {
		fmt.Printf("  Console:   %s/  (the web console)\n", stack.APIURL)
	}
	if stack.PrometheusURL != "" {
		fmt.Printf("  Prometheus: %s  (discovers the simulator and local deployments in %s)\n", stack.PrometheusURL, filepath.Join(opts.DataDir, "prometheus", "targets"))
	}
	fmt.Printf("  Broker:    %s\n  Redis:     %s\n  Data:      %s\n", stack.BrokerURL, stack.RedisAddr()+" (password in "+filepath.Join(opts.DataDir, "redis.password")+")", opts.DataDir)
	if stack.LocalSessionID != "" {
		fmt.Printf("  Cluster: %s, session %s  (cluster_session_id for executions and runs)\n", local.LocalClusterName, stack.LocalSessionID)
	}
	for _, name := range stack.Functions() {
		u, _ := stack.FunctionURL(name)
		fmt.Printf("  %-16s %s  (log: %s)\n", name, u, filepath.Join(opts.DataDir, "logs", name+".log"))
	}
	if stack.Auth() == "off" {
		fmt.Println("  Auth:   OFF (LENS_AUTH=off): anyone on this machine can use the API; LENS_AUTH=required turns tokens on")
	} else {
		fmt.Printf("  Auth:   required; create a token with: %s token create --data-dir %s --scopes simulation:read,simulation:run\n", os.Args[0], opts.DataDir)
	}
	// On a first start (a new data dir) the functions compile their WASM modules in the
	// background: say so, and say when they are done, module by module.
	if warming := stack.Warming(ctx); len(warming) > 0 {
		fmt.Printf("  Modules:  %s (first start only); the routes that need one answer 503 until %q\n",
			strings.Join(warming, ", "), modulesReady)
		started := time.Now()
		go func() {
			err := stack.WaitWarm(ctx, func(item string) {
				fmt.Printf("%s: done in %.0fs\n", item, time.Since(started).Seconds())
			})
			if err == nil {
				fmt.Printf("%s in %.0fs.\n", modulesReady, time.Since(started).Seconds())
			}
		}()
	}
	fmt.Println("Ctrl-C (or closing the terminal) stops and drains everything.")
	<-ctx.Done()
	logger.Print("stopping: draining functions")
	stack.Stop()
}
