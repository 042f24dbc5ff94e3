# chainplan — build, test and demo. `make test` and `make demo` work on a fresh clone:
# Go tools come through the go.mod tool block, and the Python side gets a virtual
# environment (.venv) with torch, pyarrow and the build and lint tools.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.Version=$(VERSION)
PKGS     := ./...
FUZZTIME ?= 10s
PYTHON3  ?= python3
VENV     ?= .venv
PY       := $(VENV)/bin/python
# torch comes from PyPI (the default Linux build); pip's cache serves it after the first time.
PY_DEPS  := torch pyarrow numpy tqdm pytest mypy ruff pybindgen setuptools wheel

.PHONY: all build test lint lint-py fmt-check vet staticcheck deps-check test-go test-py venv bind fuzz fuzz-long bench testdata-profiles demo clean

all: build

build:
	$(GO) build $(PKGS)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/chainplan ./cmd/chainplan

## test: everything CI runs — lint (Go and Python), dependency rules, the Go tests (race
## detector, -short), a short fuzzing pass over the parsers, and the Python tests.
test: lint deps-check test-go fuzz test-py

lint: fmt-check vet staticcheck lint-py

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.venv/*')); \
	if [ -n "$$out" ]; then echo "gofmt: these files need formatting:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) tool staticcheck $(PKGS)

## deps-check: the planners must stay free of cgo, Arrow and SQLite (STYLE.md §3.2 rule 2).
deps-check:
	@bad=$$($(GO) list -deps ./planner/... | grep -E 'sqlite3|arrow' || true); \
	if [ -n "$$bad" ]; then echo "planner/ must not depend on:"; echo "$$bad"; exit 1; fi; \
	echo "deps-check: planner/ depends on neither SQLite nor Arrow"

test-go:
	$(GO) test -race -short -count=1 $(PKGS)

## venv: the project's virtual environment with every Python dependency.
venv: $(VENV)/.deps-stamp

$(VENV)/.deps-stamp: Makefile pyproject.toml
	test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(PY_DEPS)
	touch $@

## bind: build the gopy extension and the CLI into python/chainplan (an editable install).
bind: venv
	$(PY) -m pip install -q --no-build-isolation --no-deps -e .

test-py: bind
	$(PY) -m pytest -q python/tests

lint-py: venv
	$(PY) -m ruff check python setup.py
	$(PY) -m mypy python/chainplan

## fuzz: a brief run of every fuzz target (FUZZTIME each); `make fuzz-long` runs longer.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParseChain$$' -fuzztime=$(FUZZTIME) .
	$(GO) test -run='^$$' -fuzz='^FuzzParsePlan$$' -fuzztime=$(FUZZTIME) .
	$(GO) test -run='^$$' -fuzz='^FuzzReadProfile$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=2s ./profiler

fuzz-long:
	$(MAKE) fuzz FUZZTIME=5m

bench:
	$(GO) test -run='^$$' -bench=. -benchtime=3x ./planner/...
	$(GO) test -run='^$$' -bench=Ingest -benchtime=20x ./store ./cmd/chainplan
	$(GO) test -run='^$$' -bench=Queries ./store

## testdata-profiles: regenerate the pyarrow-written profiles the Go tests read.
testdata-profiles: venv
	$(PY) testdata/profiles/generate.py

## demo: the CLI on the example chains at several budgets.
demo:
	bash scripts/demo.sh

clean:
	rm -rf bin build python/chainplan/_gocore python/chainplan/bin *.egg-info
