package main

import (
	"context"
	"flag"
	"fmt"
	"io"
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
	buildScript := flag.String("build-script", filepath.Join("wasm-modules", "build.sh"),
		"builds, in the background, the WASM modules the modules' manifest lists as pending (make run defers baseten_trace); empty: none")
	flag.Parse()
	for _, name := range []string{"LENS_DATASET_MIRROR", "LENS_MODULE_DIR", "LOG_LEVEL"} {
		if v := os.Getenv(name); v != "" {
			opts.Env[name] = v
		}
	}
	logger := log.New(os.Stderr, "lensfn-local: ", log.LstdFlags)
	opts.Log = logger.Printf
	if os.Getenv("LOG_LEVEL") == "debug" {
		opts.Debug = log.New(os.Stderr, "lensfn-local: debug: ", log.LstdFlags).Printf
	}

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
	// make run builds the Baseten parser behind the first answer: build what the manifest
	// lists as pending now that the stack serves.
	build, reported := startModuleBuild(ctx, os.Stdout, *buildScript, opts.ModuleDir, opts.DataDir)
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
			if err != nil {
				return
			}
			if build != nil {
				<-reported // its outcome first
				if build.Err() != nil {
					fmt.Printf("WASM modules: %s failed to build; the others are ready in %.0fs.\n", strings.Join(build.Modules, ", "), time.Since(started).Seconds())
					return
				}
			}
			fmt.Printf("%s in %.0fs.\n", modulesReady, time.Since(started).Seconds())
		}()
	}
	fmt.Println("Ctrl-C (or closing the terminal) stops and drains everything.")
	<-ctx.Done()
	logger.Print("stopping: draining functions")
	if build != nil {
		<-build.Done() // the context stopped it, with everything it started
	}
	stack.Stop()
}

// startModuleBuild starts the background build of the modules opts.ModuleDir's manifest
// lists as pending, printing that it runs and how it ends; nil when there is nothing to build
// (a warm start, `make wasm`'s full set) or it cannot start (printed). reported is closed
// once its outcome is printed.
func startModuleBuild(ctx context.Context, out io.Writer, script, moduleDir, dataDir string) (build *local.ModuleBuild, reported <-chan struct{}) {
	pending, err := local.PendingModules(moduleDir)
	if err != nil {
		fmt.Fprintf(out, "WARNING: reading the WASM modules' manifest: %v\n", err)
		return nil, nil
	}
	if len(pending) == 0 || script == "" {
		return nil, nil
	}
	names := "WASM module " + strings.Join(pending, ", ")
	build, err = local.StartModuleBuild(ctx, script, moduleDir, filepath.Join(dataDir, "logs", "wasm-build.log"), pending)
	if err != nil {
		fmt.Fprintf(out, "WARNING: not building %s: %v\n", names, err)
		markFailed(out, moduleDir, pending, fmt.Sprintf("not built: %v", err))
		return nil, nil
	}
	fmt.Fprintf(out, "  Building: %s in the background (first start only; log: %s)\n", names, build.LogPath)
	done := make(chan struct{})
	go func() {
		defer close(done)
		switch err := build.Err(); {
		case err == nil:
			fmt.Fprintf(out, "built %s in %.0fs\n", names, build.Elapsed().Seconds())
		case ctx.Err() == nil:
			// A build that died without writing its failure (killed, or stopped before its
			// manifest) would leave the module "building" for good.
			markFailed(out, moduleDir, build.Modules, fmt.Sprintf("the background build failed (%v); see %s, then run make wasm and restart", err, build.LogPath))
			fmt.Fprintf(out, "FAILED to build %s after %.0fs: %v\nWhat needs it answers with that failure until it builds (make wasm, then restart). The end of %s:\n%s\n",
				names, build.Elapsed().Seconds(), err, build.LogPath, build.LogTail(20))
		}
	}()
	return build, done
}

// markFailed records reason in the manifest for modules still pending without an error, so
// the functions answer with it instead of waiting for a build that is over.
func markFailed(out io.Writer, moduleDir string, modules []string, reason string) {
	if err := local.MarkPendingFailed(moduleDir, modules, reason); err != nil {
		fmt.Fprintf(out, "WARNING: could not record the failed build in %s: %v\n", moduleDir, err)
	}
}
