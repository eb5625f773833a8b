# Thin wrapper over CMake. `make demo` and `make test` are the two set-up commands.
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=

.PHONY: all deps build debug unittest test integration benchsmoke faults demo bench fuzz clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Debug build with AddressSanitizer and UndefinedBehaviorSanitizer.
debug: deps
	@cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug -DHPCPLANE_SANITIZE=ON >/dev/null
	@cmake --build build-debug -j$(JOBS)

unittest: build
	@cd $(BUILD) && ctest -L unit --output-on-failure -j$(JOBS)

integration: build
	@cd $(BUILD) && ctest -L integration --output-on-failure

# Every test: unit tests first (fast), then the integration tests against real Slurm daemons,
# then every benchmark at a tiny size (bench/smoke.sh) so none rots unnoticed.
test: build
	@cd $(BUILD) && ctest --output-on-failure -L unit -j$(JOBS) && ctest --output-on-failure -L integration && \
		ctest --output-on-failure -L bench

benchsmoke: build
	@cd $(BUILD) && ctest --output-on-failure -L bench

# The kill -9 campaign (bench/faults.sh, ~4 minutes), not yet part of `make test`.
faults: build
	@cd $(BUILD) && ctest --output-on-failure -L faults

demo: build
	@bash scripts/demo.sh $(BUILD)/hpcplane

# Benchmarks (several minutes; see bench/README.md). Not part of `make test`.
bench: build
	@bash bench/up_to_ready.sh $(BUILD)/hpcplane
	@$(BUILD)/bench_decision_cost
	@bash bench/cold_start.sh $(BUILD)
	@bash bench/warm_dispatch.sh $(BUILD)
	@bash bench/idle_cost.sh $(BUILD)
	@bash bench/trace_replay.sh $(BUILD)
	@$(BUILD)/bench_controlplane
	@$(BUILD)/bench_api_load
	@bash bench/history_query.sh $(BUILD)

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
