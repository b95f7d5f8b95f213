# Lensfn: one Makefile. `make help` lists the targets.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
BIN := bin
MODULES := $(BIN)/modules

.PHONY: help build wasm wasm-first kodata run test lint check bench fuzz fidelity clean

help: ## list the targets
	@awk -F ':.*## ' '/^[a-z-]+:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# -w: no DWARF in the local binaries, which nearly halves each link (4.4 -> 2.5 CPU s for
# simulation-api, 12 links) on a cold `make run`; the symbol table stays, so panics still name
# functions and lines. `make build LDFLAGS=` keeps DWARF for a debugger.
LDFLAGS ?= -w

# The commands the local stack runs: every function's cmd, except an image cmd the stack runs a
# local build of instead (deploy/local's LocalBuilds): the deployer of the Knative image
# (functions/deployer/cmd/deployer, both providers; ko builds it) is replaced by
# cmd/deployer-local (the local provider only, none of the knative provider's Kubernetes and
# Knative Serving packages: about 110 packages less to compile on a cold make run).
LOCAL_CMDS := $(addprefix ./,$(filter-out functions/deployer/cmd/deployer,$(wildcard functions/*/cmd/*)))

build: ## build every function (as the local stack runs it) and the local stack into bin/
	@mkdir -p $(BIN)
	$(GO) build -ldflags='$(LDFLAGS)' -o $(BIN)/ $(LOCAL_CMDS) ./deploy/local/cmd/lensfn-local ./deploy/lensctl/cmd/lensctl

WASM_EXAMPLES = $$(command -v wat2wasm >/dev/null || echo --no-examples)

wasm: ## build the built-in WASM modules (and, with Debian's wabt, the example user module) into bin/modules
	wasm-modules/build.sh $(MODULES) $(WASM_EXAMPLES)

# The modules make run builds after the stack serves: the Baseten trace parser needs
# parquet-go, protobuf and their compressors (287 packages for wasip1; the seven other guests
# need 89 between them), about 70 of the ~95 CPU s of a cold `make wasm`.
DEFERRED_MODULES := baseten_trace

wasm-first: ## the WASM modules make run builds before the stack starts: all but the Baseten parser, which bin/lensfn-local builds in the background
	wasm-modules/build.sh $(MODULES) $(WASM_EXAMPLES) $(addprefix --defer ,$(DEFERRED_MODULES))

kodata: wasm ## stage the WASM modules for ko images (ko copies cmd/*/kodata to /var/run/ko)
	for f in simulation-api trace-replayer; do d=functions/$$(echo $$f | tr -d -)/cmd/$$f; \
	  rm -rf $$d/kodata && mkdir -p $$d/kodata && cp -r $(MODULES) $$d/kodata/modules; \
	done

# build and wasm-first run side by side: each is one CPU-bound toolchain run, and on two cores
# either leaves a core idle at times (the host build's long single-package compiles and its
# links; the modules' final links). The deferred modules are pending in bin/modules/manifest.json
# until lensfn-local's background build (wasm-modules/build.sh --only) adds them; a warm run
# finds every module up to date and builds nothing.
run: ## start the local stack on 127.0.0.1:8080 (Redis, broker, every function)
	$(MAKE) --no-print-directory -j2 build wasm-first
	$(BIN)/lensfn-local

# The race pass covers the packages that run goroutines against each other (the engine, the
# pipeline stages, the store, the simulator); it needs cgo and a C compiler, and is skipped with a
# note where there is none.
RACE_PKGS := ./runtime/... ./functions/... ./deploy/...

# tests/knative reads the Knative Eventing CRD schemas from the shared directory
# (LENS_SHARED_DIR, default ../shared beside the repository).
KNATIVE_CRDS := $${LENS_SHARED_DIR:-../shared}/reference/knative-crds

test: ## run every test (embedded Redis unless REDIS_URL is set; tests/knative checks the Knative manifests), then the race pass
	$(GO) test -count=1 -timeout 20m ./...
	@test -f "$${LENS_SHARED_DIR:-../shared}/traces/mooncake/conversation_trace.jsonl" || echo "test: $${LENS_SHARED_DIR:-../shared}/traces is absent, so tests/e2e and tests/conformance ran on generated traces only (go test -v names the skipped real-trace cases)"
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || [ -n "$${LENS_CHROMIUM:-}" ] || echo "test: chromium is absent, so tests/console skipped the console's browser tests (apt-get install chromium)"
	@test -d $(KNATIVE_CRDS) || echo "test: $(KNATIVE_CRDS) is absent, so tests/knative skips the Eventing CRD schema checks (Services are still validated)"
	@if [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v "$$($(GO) env CC)" >/dev/null; then \
	  echo "$(GO) test -race -count=1 -timeout 15m $(RACE_PKGS)"; \
	  $(GO) test -race -count=1 -timeout 15m $(RACE_PKGS); \
	else echo "test: no C compiler for cgo, so the race pass is skipped"; fi

# staticcheck at a pinned version, fetched through the module proxy (GOPROXY) into the module
# cache on first use; it is not a dependency of the module, so go.mod does not list it. Its
# default checks run; a finding that is not a defect is silenced where it is, with
# //lint:ignore <check> <reason> (the WASM guests' //go:wasmexport functions, whose only caller
# is the host, which staticcheck cannot see).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: ## gofmt, go vet and staticcheck; fails on any finding
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...

check: lint ## lint (gofmt, vet, staticcheck), tidy and test; fails on any diff or finding
	$(GO) mod tidy -diff
	$(GO) generate ./events && git diff --exit-code -- events/schemas
	$(MAKE) test

bench: ## run the benchmarks whose figures BENCHMARKS.md quotes
	tests/bench/run.sh

# The ground truth is read where it is published (../shared beside the repository) or from
# GROUND_TRUTH; FIT=N refits the coefficients in at most N scoring passes, LOMO=N scores each model
# left out of a fit of N passes, SEEDS picks the Poisson draws averaged.
SEEDS ?= 1,2,3
fidelity: ## score the vLLM engine model against real vLLM runs (GROUND_TRUTH=<csv>, FIT=N, LOMO=N, SEEDS=1,2,3)
	$(GO) run ./tests/fidelity/cmd/fidelity -seeds $(SEEDS) $(if $(FIT),-fit $(FIT)) $(if $(LOMO),-lomo $(LOMO))

fuzz: ## run every Fuzz* target of the module for FUZZTIME each (default 10s)
	tests/fuzz/run.sh

clean: ## remove build outputs
	rm -rf $(BIN)
