# chainplan — build, test and demo. `make test` and `make demo` work on a fresh clone:
# Go tools come through the go.mod tool block, nothing else is needed yet.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.Version=$(VERSION)
PKGS     := ./...
FUZZTIME ?= 10s

.PHONY: all build test lint fmt-check vet staticcheck deps-check test-go fuzz fuzz-long bench demo clean

all: build

build:
	$(GO) build $(PKGS)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/chainplan ./cmd/chainplan

## test: everything CI runs — lint, dependency rules, the Go tests (race detector, -short),
## and a short fuzzing pass over the parsers.
test: lint deps-check test-go fuzz

lint: fmt-check vet staticcheck

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

## fuzz: a brief run of every fuzz target (FUZZTIME each); `make fuzz-long` runs longer.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParseChain$$' -fuzztime=$(FUZZTIME) .
	$(GO) test -run='^$$' -fuzz='^FuzzParsePlan$$' -fuzztime=$(FUZZTIME) .

fuzz-long:
	$(MAKE) fuzz FUZZTIME=5m

bench:
	$(GO) test -run='^$$' -bench=. -benchtime=3x ./planner/...

## demo: the CLI on the example chains at several budgets.
demo:
	bash scripts/demo.sh

clean:
	rm -rf bin
