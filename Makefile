# Top-level build. Each area adds its own targets in hack/make/<area>.mk; this file
# only holds what every area shares. Run `make help` for the list.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := build

MODULE     := github.com/longhorn-go/longhorn
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
GIT_COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS    := -X $(MODULE)/meta.Version=$(VERSION) -X $(MODULE)/meta.GitCommit=$(GIT_COMMIT) -X $(MODULE)/meta.BuildDate=$(BUILD_DATE)
BIN        := $(CURDIR)/bin
# Cache for tools and test binaries, outside the work tree, keyed by version inside.
CACHE_DIR  ?= $(HOME)/.cache/longhorn-testbed
GO_TEST_FLAGS ?= -p 2 -timeout 30m

# Areas append to these: prerequisites of `make test`, environment for `go test`,
# and extra test steps run after `go test`.
TEST_DEPS  :=
TEST_ENV   := LONGHORN_REQUIRE_TOOLS=1
TEST_STEPS :=
GENERATE_STEPS := proto

.PHONY: build test unit verify generate proto fmt vet help clean
build: ## build bin/longhorn with version ldflags
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/longhorn .

include $(wildcard hack/make/*.mk)

test: build $(TEST_DEPS) ## the whole test suite (what CI runs)
	$(TEST_ENV) LONGHORN_BINARY=$(BIN)/longhorn go test $(GO_TEST_FLAGS) ./...
	@for s in $(TEST_STEPS); do echo "== make $$s"; $(MAKE) --no-print-directory $$s || exit 1; done

unit: ## pure unit tests only (no control plane, no processes)
	go test -short $(GO_TEST_FLAGS) ./...

generate: $(GENERATE_STEPS) ## regenerate every generated file

proto: ## regenerate gRPC code from .proto files
	hack/gen-proto.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	go vet ./...

verify: ## fail when generated files are stale, gofmt/go vet complain or a budget is exceeded
	$(MAKE) --no-print-directory budgets
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	go vet ./...
	$(MAKE) --no-print-directory generate
	@git diff --exit-code --stat -- . || { echo "verify: generated files are stale; run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all | grep '^??')" || { git status --porcelain | grep '^??'; echo "verify: make generate created untracked files"; exit 1; }

clean:
	rm -rf $(BIN)

help:
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-20s %s\n", $$1, $$2}'
