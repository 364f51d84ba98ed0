# memq — the two commands: `make run` (build and start memqd) and `make test` (build and run every test).
# Each target first installs any missing Debian package (as root), or prints the one apt-get line to run.

BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_TIMEOUT ?= 600

# ccache keys on paths relative to the checkout, so a fresh clone elsewhere reuses earlier compilations.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true

DEB_PACKAGES := build-essential cmake ninja-build ccache pkg-config git python3 xz-utils \
  libsqlite3-dev libsqlitecpp-dev nlohmann-json3-dev libasio-dev libgit2-dev libspdlog-dev \
  libgtest-dev libgmock-dev neovim lintian clang postgresql libpq-dev zsh fish

.PHONY: all build run test clean deps configure install package test-asan test-tsan fuzz

all: build

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Installing missing packages: $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "Missing Debian packages. Run:"; echo "  sudo apt-get install -y $$missing"; exit 1; \
	  fi; \
	fi

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Only the two programs: the tests and benchmarks are built by `make test` (or `make build`).
run: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target memqd memq
	$(BUILD_DIR)/bin/memqd --foreground

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure --timeout $(CTEST_TIMEOUT) -j $(JOBS)

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# The Debian package (CPack, DEB): $(BUILD_DIR)/memq_<version>_<arch>.deb, installing under /usr.
package: build
	cmake --build $(BUILD_DIR) --target package

# ASan, LSan and TSan reports are written to files (log_path) rather than stderr, so a report from a memqd or memq
# that a test spawned is not lost in a log the test never reads. Any report fails the run, after ctest, and is printed.
# GCC's UBSan ignores log_path; it prints to stderr and, built with -fno-sanitize-recover, stops the process, which
# fails the test that ran it.
# $(1): the build directory.
define run_under_sanitizers
	@rm -rf $(1)/sanitizer-reports; mkdir -p $(1)/sanitizer-reports
	@start=$$(date +%s); (cd $(1) && $(2)); status=$$?; \
	echo "$(1): ctest exit $$status after $$(( $$(date +%s) - start )) s"; \
	if [ -n "$$(ls -A $(1)/sanitizer-reports)" ]; then \
	  cat $(1)/sanitizer-reports/*; echo "sanitizer reports in $(1)/sanitizer-reports/"; status=1; \
	fi; exit $$status
endef

# The whole suite under AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer.
test-asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMEMQ_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	$(call run_under_sanitizers,build-asan,\
	  ASAN_OPTIONS=detect_leaks=1:log_path=$(CURDIR)/build-asan/sanitizer-reports/asan \
	  UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure --timeout $(CTEST_TIMEOUT) -j $(JOBS))

# ThreadSanitizer on everything that runs threads: the concurrency tests, the co-change cache, the client library and
# every integration test that drives a real (instrumented) memqd. Serial, because TSan slows each test several-fold.
TSAN_TESTS ?= BackgroundSave|BegunAhead|TeamTest|Concurren|Clients|Thread|CoChange|RpcClient|DaemonTest|HostileTest|HostileServerTest|CrashTest|HookTest|HookWithoutDaemonTest|CliTest|UnreachableTest|HostileInputTest|ColdStartTest|HostileFilesTest
test-tsan: deps
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMEMQ_TSAN=ON
	cmake --build build-tsan -j $(JOBS)
	$(call run_under_sanitizers,build-tsan,\
	  TSAN_OPTIONS=second_deadlock_stack=1:log_path=$(CURDIR)/build-tsan/sanitizer-reports/tsan \
	  ctest --output-on-failure --timeout $(CTEST_TIMEOUT) -R '$(TSAN_TESTS)')

# The libFuzzer targets of tests/fuzz (clang, with ASan and UBSan), each run for FUZZ_SECONDS on a copy of its seeds
# in tests/fuzz/corpus/<target>/, so the committed seeds never change. A crash stops the run and leaves the input in
# build-fuzz/fuzz/run/<target>/artifacts/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := framing envelope fts_query file_path
fuzz: DEB_PACKAGES += clang libclang-rt-14-dev
fuzz: deps
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
	  -DCMAKE_CXX_COMPILER=clang++ -DMEMQ_FUZZ=ON -DMEMQ_BUILD_TESTS=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_targets
	@set -e; for t in $(FUZZ_TARGETS); do \
	  run=build-fuzz/fuzz/run/$$t; rm -rf $$run; mkdir -p $$run/corpus $$run/artifacts; \
	  cp tests/fuzz/corpus/$$t/* $$run/corpus/; \
	  echo "== fuzz_$$t: $(FUZZ_SECONDS) s"; \
	  build-fuzz/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -artifact_prefix=$$run/artifacts/ -print_final_stats=1 $$run/corpus 2>$$run/log || \
	    { tail -n 40 $$run/log; echo "fuzz_$$t failed; the input is in $$run/artifacts/"; exit 1; }; \
	  grep -E '^stat::number_of_executed_units|DONE' $$run/log; \
	done

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan build-fuzz
