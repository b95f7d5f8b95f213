package inferencesim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
)

// ErrUsage is returned by Run for a bad command line (exit status 2).
var ErrUsage = errors.New("usage")

// Main is the command: the simulator is not an fn function (it serves fasthttp on its own
// ports, takes vLLM's command line and owns its drain), so its main is Main rather than
// fn.Main. It reads the environment once, serves until SIGTERM or SIGINT and exits 2 on
// failure.
func Main() {
	host, _ := os.Hostname()
	if err := runCommand(context.Background(), os.Args[1:], os.Getenv, host, os.Stderr); err != nil {
		os.Exit(2)
	}
}

// LoadEnvironment reads the settings the simulator takes from the environment (every
// other setting is on the command line); hostname is the pod name under Knative.
func LoadEnvironment(getenv func(string) string, hostname string) (config.Environment, ModuleDirs) {
	env := config.Environment{Port: getenv("PORT"), PodName: getenv("POD_NAME"), KService: getenv("K_SERVICE"), Hostname: hostname,
		PodNamespace: getenv("POD_NAMESPACE"), PodIP: getenv("POD_IP"), SimModel: getenv("SIM_MODEL"),
		PythonHashSeed: getenv("PYTHONHASHSEED"), ListenHost: getenv("LENS_LISTEN_HOST"),
		APIKey: getenv("VLLM_API_KEY"), AdminToken: getenv("LENS_SIM_ADMIN_TOKEN"),
		AllowedHosts: getenv("LENS_ALLOWED_HOSTS")}
	dirs := ModuleDirs{Builtin: getenv("LENS_BUILTIN_MODULE_DIR"), User: getenv("LENS_MODULE_DIR"), Cache: getenv("LENS_CACHE_DIR")}
	return env, dirs
}

// runCommand is Main without the process: Run with the WASM calculators of the module
// directories, its failure (other than a usage error, which Run has explained) on stderr.
func runCommand(ctx context.Context, args []string, getenv func(string) string, hostname string, stderr io.Writer) error {
	env, dirs := LoadEnvironment(getenv, hostname)
	calcs := &WASMCalculators{Dirs: dirs}
	err := Run(ctx, args, env, stderr, WithCalculatorResolver(calcs.Resolve), WithStepCostResolver(calcs.ResolveStepCost))
	_ = calcs.Close(context.Background())
	if err != nil && !errors.Is(err, ErrUsage) {
		fmt.Fprintln(stderr, "inference-sim:", err)
	}
	return err
}

// Run parses the command line, builds the simulator and serves until
// SIGTERM or SIGINT, then drains in-flight requests.
func Run(ctx context.Context, args []string, env config.Environment, stderr io.Writer, opts ...Option) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Fprint(stderr, config.Usage())
			return nil
		}
	}
	cfg, err := config.Parse(args, env, nil)
	if err != nil {
		fmt.Fprintf(stderr, "inference-sim: %v\n\n%s", err, config.Usage())
		return ErrUsage
	}
	logger, err := klogLogger(cfg.Klog)
	if err != nil {
		fmt.Fprintf(stderr, "inference-sim: %v\n\n%s", err, config.Usage())
		return ErrUsage
	}
	defer klog.Flush()
	sim, err := New(cfg, append([]Option{WithLogger(logger)}, opts...)...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return sim.Serve(ctx)
}
