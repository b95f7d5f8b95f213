package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	inferencesim "github.com/lensfn/lensfn/functions/inference-sim"
)

func main() {
	host, _ := os.Hostname()
	env := inferencesim.Environment{Port: os.Getenv("PORT"), PodName: os.Getenv("POD_NAME"),
		KService: os.Getenv("K_SERVICE"), Hostname: host,
		PodNamespace: os.Getenv("POD_NAMESPACE"), PodIP: os.Getenv("POD_IP"),
		SimModel: os.Getenv("SIM_MODEL"), PythonHashSeed: os.Getenv("PYTHONHASHSEED"),
		ListenHost: os.Getenv("LENS_LISTEN_HOST"), APIKey: os.Getenv("VLLM_API_KEY"), AdminToken: os.Getenv("LENS_SIM_ADMIN_TOKEN")}
	calcs := &inferencesim.WASMCalculators{Dirs: inferencesim.ModuleDirs{Builtin: os.Getenv("LENS_BUILTIN_MODULE_DIR"),
		User: os.Getenv("LENS_MODULE_DIR"), Cache: os.Getenv("LENS_CACHE_DIR")}}
	err := inferencesim.Run(context.Background(), os.Args[1:], env, os.Stderr, inferencesim.WithCalculatorResolver(calcs.Resolve))
	_ = calcs.Close(context.Background())
	if err != nil {
		if !errors.Is(err, inferencesim.ErrUsage) {
			fmt.Fprintln(os.Stderr, "inference-sim:", err)
		}
		os.Exit(2)
	}
}
