# Nomarr — developer and CI entry points. GNU make and Go; `make deps`
# installs the rest on Debian/Ubuntu (ffmpeg, TagLib, sox, espeak-ng, the
# ONNX Runtime library, and gcc when no C compiler is on PATH). Without a C
# compiler (no cgo) the build has no MusiCNN analyzer, no tag writing and no
# race detector (see RACE below).
#
#   make test        deps for the tests, go vet, go test (with -race when cgo works), fuzz smoke
#   make fuzz        every fuzz target for FUZZTIME (default 60s) each
#   make bench       benchmarks, output also in bench.out
#   make build       bin/nomarr
#   make sim SCENARIO=scenarios/x.yaml [SIMFLAGS='--seed 3 --json']
#   make run [LIBRARY=DIR]  tag DIR (or a generated demo library) with the MusiCNN pipeline
#   make run-scenarios      every scenario through the simulator
#   make fmt-check   fail when gofmt would change a file
#   make screenshots refresh docs/screenshots/*.png (the pages in chromium)
#   make deb         the Debian package dist/nomarr_<version>_amd64.deb
#   make test-package  install the package into a throwaway Debian root and check it (root; CI runs it)

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

GO ?= go

# The race detector needs cgo, hence a C compiler; `go env CGO_ENABLED` is 0
# when none is installed. Override with RACE=-race or RACE= .
RACE ?= $(shell [ "$$($(GO) env CGO_ENABLED 2>/dev/null)" = 1 ] && echo -race)

# Per-package limit of go test: a hung package fails fast and names its
# running tests, and a slow machine still passes (the SQLite package takes
# several minutes under -race on 2 busy cores).
TESTTIMEOUT ?= 8m
# The real-process suite runs ~5 min under -race on 2 cores; room to spare.
REALPROCTIMEOUT ?= 10m

# Fuzzing: every `func FuzzX(` in a _test.go file under FUZZ_ROOTS is a
# target; go test accepts one -fuzz target per run, so they run one by one.
FUZZ_ROOTS ?= .
FUZZTIME ?= 60s
# The smoke's budget is a count of executions, not a time: with a time,
# Go 1.26's fuzzing engine can fail a target with "context deadline
# exceeded" and no failing input when its deadline races a worker
# (golang/go#75804, fixed in Go 1.27); a count has no deadline. 20,000
# executions take 1-30 s a target here (the libav decoder is the slowest).
SMOKE_FUZZTIME ?= 20000x
# The smoke spends little time minimizing new (non-failing) inputs.
SMOKE_FUZZFLAGS ?= -fuzzminimizetime 200x
FUZZFLAGS ?=

BENCHTIME ?=
SCENARIO ?=
SIMFLAGS ?=
SCENARIOS := $(sort $(wildcard scenarios/*.yaml scenarios/*.yml scenarios/*.json))

# `make run LIBRARY=DIR` tags DIR with real worker processes and the MusiCNN
# pipeline (DATA_DIR holds the store); without LIBRARY it generates a small
# demo library (speech, tones, noise, mixes in five formats) and tags that.
# `make run-scenarios` runs every scenario in the simulator.
LIBRARY ?=
ANALYZER ?= musicnn
WORKERS ?= 2
DATA_DIR ?= $(CURDIR)/.nomarr
DEMO_DIR ?= $(DATA_DIR)/demo
RUN_TARGET ?= $(if $(LIBRARY),run-library,run-demo)

.PHONY: screenshots deb test-package bench-pipeline bench-streamed deps test-deps test vet unit fuzz-smoke fuzz fuzz-list bench build sim run run-scenarios run-library run-demo fmt-check

test: test-deps vet unit fuzz-smoke

# System packages (ffmpeg, TagLib, sox, espeak-ng; gcc when no C compiler is
# on PATH) and the ONNX Runtime library; idempotent and quick when
# everything is there.
deps:
	scripts/deps.sh
	@if [ -x scripts/fetch-ort.sh ]; then scripts/fetch-ort.sh; fi

# deps, plus what only the tests use (qemu-user, for the simulator's
# cross-machine determinism test).
test-deps:
	scripts/deps.sh --test
	@if [ -x scripts/fetch-ort.sh ]; then scripts/fetch-ort.sh; fi

vet:
	$(GO) vet ./...

# The real-process tests compare timings with the simulator's (within
# 800 ms), so they run on their own, after the rest: on a small machine the
# other packages' tests (the property suite under the race detector) would
# otherwise take the CPU their processes need to keep time.
# In `make test` the browser tests must run (chromium comes with
# test-deps): a missing browser fails them instead of skipping.
unit: export NOMARR_TEST_REQUIRE_BROWSER = 1
unit:
	@if [ -z "$(RACE)" ]; then echo "WARNING: cgo unavailable (no C compiler?): testing without the race detector" >&2; fi
	$(GO) test $(RACE) -count=1 -timeout $(TESTTIMEOUT) $$($(GO) list ./... | grep -v '/test/realproc$$')
	$(GO) test $(RACE) -count=1 -timeout $(REALPROCTIMEOUT) ./test/realproc

# fuzz_targets prints "DIR FUNC" for every fuzz target.
define fuzz_targets
grep -rHoE --include='*_test.go' --exclude-dir=testdata --exclude-dir=vendor --exclude-dir=.git \
	'^func Fuzz[A-Za-z0-9_]*\(' $(FUZZ_ROOTS) \
	| sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($$#\1 \2#' | sort -u
endef

# run_fuzz runs every target for $(1) with flags $(2), reports every
# failure, fails at the end. A run that ends with only "context deadline
# exceeded" and no failing input is the fuzzing engine missing its own
# deadline on a starved machine (a worker slow to stop), not a finding: that
# target runs once more.
define run_fuzz
targets=$$($(fuzz_targets) || true); \
if [ -z "$$targets" ]; then echo "no fuzz targets under $(FUZZ_ROOTS)"; exit 0; fi; \
failed=(); \
log=$$(mktemp); \
while read -r dir name; do \
	pkg=./$${dir#./}; \
	for try in 1 2; do \
		echo "=== fuzz $$name in $$pkg for $(1)"; \
		if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(1) $(2) "$$pkg" 2>&1 | tee "$$log"; \
			[ "$${PIPESTATUS[0]}" -eq 0 ]; then break; fi; \
		if [ $$try -eq 1 ] && grep -q 'context deadline exceeded' "$$log" && ! grep -q 'Failing input written' "$$log"; then \
			echo "=== $$name missed the fuzzing engine's deadline without a failing input; once more"; continue; fi; \
		failed+=("$$name ($$pkg)"); break; \
	done; \
done <<< "$$targets"; \
rm -f "$$log"; \
if [ $${#failed[@]} -gt 0 ]; then \
	echo "FAIL: fuzz targets: $${failed[*]}"; \
	echo "      (failing inputs are saved under <pkg>/testdata/fuzz/<target>/; rerun one with go test -run '<target>/<file>' <pkg>)"; \
	exit 1; \
fi
endef

fuzz-smoke:
	@$(call run_fuzz,$(SMOKE_FUZZTIME),$(SMOKE_FUZZFLAGS))

fuzz:
	@$(call run_fuzz,$(FUZZTIME),$(FUZZFLAGS))

fuzz-list:
	@$(fuzz_targets)

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $(if $(BENCHTIME),-benchtime $(BENCHTIME)) ./... | tee bench.out
	scripts/bench-pipeline.sh | tee -a bench.out

# Our decode + features + inference against essentia.js + onnxruntime-node on
# the same files, side by side, with the ratio and the prediction difference.
bench-pipeline: deps
	scripts/bench-pipeline.sh

# The streamed pipeline of a worker: real-time factor per core and per
# stage on a 240 s track in four formats, beside the reference, and the
# peak RSS for a 10-minute and a 2-hour file.
bench-streamed: deps
	scripts/bench-pipeline.sh --streamed

build: deps
	$(GO) build -o bin/nomarr ./cmd/nomarr

# The Debian package: the binary, the ONNX Runtime library, the models,
# /etc/nomarr/config.yaml and nomarr.service (packaging/,
# docs/deployment.md); lintian must find no error when installed.
deb: deps
	scripts/build-deb.sh

# Builds the package and installs it with apt into a debootstrapped Debian
# 12 root (cached under .cache/package-test), never into this machine:
# tag, nomarr.service under the root's own systemd booted in namespaces
# (scripts/boot-root.sh), upgrade, remove, purge. Needs root.
test-package: deps
	scripts/test-package.sh

sim:
	@if [ -z "$(SCENARIO)" ]; then echo "usage: make sim SCENARIO=scenarios/x.yaml [SIMFLAGS='--seed 3']" >&2; exit 2; fi
	$(GO) run ./cmd/nomarr sim $(SCENARIO) $(SIMFLAGS)

run: $(RUN_TARGET)

# LIBRARY is single-quoted for the shell (a quote in it survives); a
# leading ~ or ~/ is expanded as the shell would have, unquoted.
run-library: deps build
	@lib='$(subst ','\'',$(LIBRARY))'; \
	case "$$lib" in "~") lib=$$HOME ;; "~/"*) lib=$$HOME/$${lib#"~/"} ;; esac; \
	set -x; \
	bin/nomarr tag "$$lib" --analyzer "$(ANALYZER)" --workers "$(WORKERS)" --data-dir "$(DATA_DIR)" --log-level warn

# The demo tags good/ and shows every nom tag of one file, then tags bad/
# (not audio, cut short, empty, too short, no audio stream) to show the
# failure handling: those files fail with their reason (tag exits 1 for
# them, which the demo expects), and `nomarr failed` lists them.
run-demo: deps build
	@[ -d "$(DEMO_DIR)/good" ] && [ -d "$(DEMO_DIR)/bad" ] || scripts/testaudio.sh "$(DEMO_DIR)"
	bin/nomarr tag "$(DEMO_DIR)/good" --analyzer "$(ANALYZER)" --workers "$(WORKERS)" --data-dir "$(DATA_DIR)" --log-level warn
	@echo "tags of $(DEMO_DIR)/good/speech.flac:"; ffprobe -v error -show_entries format_tags -of default=nw=1 "$(DEMO_DIR)/good/speech.flac" | grep -i '^TAG:NOM_'
	@echo; echo "the demo's bad files: each fails with its reason, and tag exits 1 for them"
	bin/nomarr tag "$(DEMO_DIR)/bad" --analyzer "$(ANALYZER)" --workers "$(WORKERS)" --data-dir "$(DATA_DIR)" --log-level error || [ $$? -eq 1 ]
	bin/nomarr failed "$(DEMO_DIR)/bad" --data-dir "$(DATA_DIR)"

# Every scenario through the simulator with its summary; fails at the end
# when any scenario failed.
run-scenarios: build
	@failed=(); \
	for f in $(SCENARIOS); do \
		echo "=== $$f"; \
		bin/nomarr sim "$$f" $(SIMFLAGS) || failed+=("$$f"); \
	done; \
	if [ $${#failed[@]} -gt 0 ]; then echo "FAIL: $${failed[*]}"; exit 1; fi; \
	echo "all $(words $(SCENARIOS)) scenarios passed"

fmt-check:
	@files=$$(find . -name '*.go' -not -path './.git/*' -not -path './vendor/*' -not -path '*/testdata/*' -print0 \
		| xargs -0 -r gofmt -l); \
	if [ -n "$$files" ]; then echo "gofmt needed on:"; echo "$$files"; exit 1; fi

# The pictures the README shows: every page of serve on a demo library,
# drawn by chromium (test/browser).
screenshots:
	scripts/deps.sh --test
	NOMARR_TEST_REQUIRE_BROWSER=1 NOMARR_TEST_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run 'TestPages' ./test/browser
