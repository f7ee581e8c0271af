# The two commands of the README: `make demo` and `make check`. Both install what they need (as root).
BUILD      ?= build
BUILD_ASAN ?= build-asan
MESON_OPTS ?=

.PHONY: all deps build build-asan deb demo demo-aws demo-gce demo-selfhosted demo-workers demo-etcd-upgrade render-demo check fuzz unit unit-asan integration lint golden bench clean fuzz

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

$(BUILD_ASAN)/build.ninja:
	CC=clang-14 meson setup $(BUILD_ASAN) -Db_sanitize=address,undefined -Db_lundef=false $(MESON_OPTS)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

build-asan: $(BUILD_ASAN)/build.ninja
	ninja -C $(BUILD_ASAN)

# Binary packages (debian/, dpkg-buildpackage) in build-deb/, checked by lintian.
deb: deps
	@scripts/make-deb.sh build-deb

demo: deps build
	@scripts/demo.sh $(BUILD)/src/cli/protokube

# The self-hosted control plane on three real masters: pivot, replacement, power cuts (docs/pivot.md).
demo-selfhosted: deps build
	@scripts/demo.sh $(BUILD)/src/cli/protokube selfhosted

# A whole cluster: three real masters and two workers that join with a token (docs/workers.md).
demo-workers: deps build
	@scripts/demo.sh $(BUILD)/src/cli/protokube workers

# etcd 3.4 -> 3.5 on three real masters, member by member, and back through the backup (docs/etcd-versions.md).
demo-etcd-upgrade: deps build
	@scripts/demo.sh $(BUILD)/src/cli/protokube etcd_upgrade

# Steps 1-2 of the scenario with cloud: aws and dns: route53, against the AWS API double.
demo-aws: deps build
	@PROTOKUBE_BIN=$(CURDIR)/$(BUILD)/src/cli/protokube /usr/bin/python3 tests/e2e/scenario_aws.py

# The same with cloud: gce, dns: clouddns and a gs:// state store, against the Google Cloud double.
demo-gce: deps build
	@PROTOKUBE_BIN=$(CURDIR)/$(BUILD)/src/cli/protokube /usr/bin/python3 tests/e2e/scenario_gce.py

render-demo: build
	@scripts/render-demo.sh $(BUILD)/src/cli/protokube

unit: build
	meson test -C $(BUILD) --print-errorlogs

unit-asan: build-asan
	meson test -C $(BUILD_ASAN) --print-errorlogs

lint:
	@scripts/check-format.sh
	@scripts/check-banned.sh
	@scripts/check-standalone.sh
	@scripts/check-layers.sh

integration: build-asan
	PROTOKUBE_BIN=$(CURDIR)/$(BUILD_ASAN)/src/cli/protokube scripts/run-integration.sh

check: deps
	@scripts/check.sh

# Regenerate the golden files (spec diagnostics, flags, manifests) from the current build.
golden: build
	@scripts/update-golden.sh $(BUILD)/src/cli/protokube

# libFuzzer over every parser, FUZZ_SECONDS each; new inputs go to build-fuzz/corpus-NAME (the committed seeds
# in tests/fuzz/NAME are read, never written). Worth keeping: copy a crash's input into tests/fuzz/NAME.
FUZZ_SECONDS ?= 60
# FUZZ_RUNS=1000000 runs each target that many executions instead of for FUZZ_SECONDS.
FUZZ_RUNS ?=
fuzz:
	test -f build-fuzz/build.ninja || CC=clang-14 meson setup build-fuzz -Dfuzzer=true
	ninja -C build-fuzz
	set -e; for f in build-fuzz/tests/fuzz/libfuzzer-*; do \
		[ -f "$$f" ] && [ -x "$$f" ] || continue; n=$${f##*/libfuzzer-}; mkdir -p build-fuzz/corpus-$$n; \
		echo "== fuzz $$n ($(FUZZ_SECONDS)s)"; \
		"$$f" $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS)) -print_final_stats=1 \
			build-fuzz/corpus-$$n tests/fuzz/$$n 2>&1 | tail -3; \
	done

bench: build
	@bench/run.sh $(BUILD)/src/cli/protokube

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) build-fuzz build-deb
