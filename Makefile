# Thin wrapper over CMake. `make demo` and `make test` are the two set-up commands.
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=
# cmake --build runs make below this one: without this every line of its output is framed by
# "Entering directory" messages.
MAKEFLAGS += --no-print-directory
CONFIGURE = cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

.PHONY: all deps deps-demo configure build debug lint format unittest test integration benchsmoke faults demo \
	bench fuzz clean kubernetes-binaries e2e-kubernetes check-bare-debian

all: build

deps:
	@bash scripts/install-deps.sh test

deps-demo:
	@bash scripts/install-deps.sh demo

configure:
	@$(CONFIGURE)

build: deps configure
	@cmake --build $(BUILD) -j$(JOBS)

# Debug build with AddressSanitizer and UndefinedBehaviorSanitizer.
debug: deps
	@cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug -DHPCPLANE_SANITIZE=ON >/dev/null
	@cmake --build build-debug -j$(JOBS)

# clang-format over src/, tests/, bench/ and fuzz/ (.clang-format), clang-tidy over src/
# (.clang-tidy); exits non-zero on the first kind of finding. `make format` rewrites in place.
lint: deps configure
	@bash scripts/lint.sh $(BUILD)

format: deps
	@bash scripts/lint.sh --fix

unittest: build
	@cd $(BUILD) && ctest -L unit --output-on-failure -j$(JOBS)

integration: build
	@cd $(BUILD) && ctest -L integration --output-on-failure -j$(JOBS)

# Every test: lint, the unit tests, then the integration tests against real Slurm daemons and a
# real Kubernetes cluster together with every benchmark at a tiny size (bench/smoke.sh),
# INTEGRATION_JOBS at a time (they mostly wait on Slurm; the browser tests take turns, ctest's
# RESOURCE_LOCK chromium). scripts/test.sh starts each step as soon as what it needs is there
# (the Go build and lint beside the C++ build, the images once hpcplane is linked).
INTEGRATION_JOBS ?= 3
test: deps configure
	@bash scripts/test.sh $(BUILD) $(JOBS) $(INTEGRATION_JOBS)

# The real Kubernetes components (one Go module, tests/kubernetes/cluster: kube, kubectl, CoreDNS,
# Helm), built into $(BUILD)/kubernetes-real/bin and cached by their inputs in
# ~/.cache/hpcplane/kubernetes-binaries; again only when those change. Cold: ~8 min on 2 cores.
kubernetes-binaries: deps
	@/usr/bin/python3 tests/kubernetes/realcluster.py binaries $(BUILD)

# scripts/install-deps.sh test on a bare Debian 12 root (mmdebstrap), then every tool's version.
check-bare-debian:
	@bash scripts/check-bare-debian.sh

# hpcplane installed with Helm on a real cluster of four kubelets, real Slurm in its pods.
e2e-kubernetes: build kubernetes-binaries
	@cd $(BUILD) && ctest --output-on-failure -R '^kubernetes_(real|helm)$$'


benchsmoke: build
	@cd $(BUILD) && ctest --output-on-failure -L bench -j$(JOBS)

# The kill -9 campaign (bench/faults.sh, ~1 minute; part of `make test`) by itself.
faults: build
	@cd $(BUILD) && ctest --output-on-failure -L faults

# Builds only the binary the demo runs (the tests and benchmarks build with `make test`/`make bench`).
demo: deps-demo
	@$(CONFIGURE)
	@cmake --build $(BUILD) -j$(JOBS) --target hpcplane
	@bash scripts/demo.sh $(BUILD)/hpcplane

# Benchmarks (several minutes; see bench/README.md). Not part of `make test`.
bench: build
	@bash bench/up_to_ready.sh $(BUILD)/hpcplane
	@$(BUILD)/bench_decision_cost
	@bash bench/cold_start.sh $(BUILD)
	@bash bench/releases.sh $(BUILD)
	@bash bench/mpi_pingpong.sh $(BUILD)
	@bash bench/warm_dispatch.sh $(BUILD)
	@bash bench/idle_cost.sh $(BUILD)
	@bash bench/trace_replay.sh $(BUILD)
	@$(BUILD)/bench_controlplane
	@$(BUILD)/bench_api_load
	@bash bench/history_query.sh $(BUILD)
	@bash bench/health_drain.sh $(BUILD)/hpcplane
	@bash bench/failover.sh $(BUILD)
	@bash bench/upgrade.sh $(BUILD)

# libFuzzer targets (clang, ASan, UBSan) over the seed corpus in tests/fuzz/corpus, each for
# FUZZ_SECONDS (bench/fuzz.sh reports executions and crashes). Not part of `make test`.
FUZZ_SECONDS ?= 60
fuzz:
	@bash scripts/install-deps.sh fuzz
	@cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DHPCPLANE_FUZZ=ON >/dev/null
	@cmake --build build-fuzz -j$(JOBS) --target fuzz_targets
	@bash bench/fuzz.sh build-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) build-debug build-fuzz
