# Web UI (issue 16, ui/): a React + Vite TypeScript app built into ui/dist,
# which is committed and embedded in the binary (package ui), so `go build`
# needs no Node. `make test` runs the component tests, checks that ui/dist is
# what the sources build, and runs the Playwright suite in Debian's chromium
# against a local cluster (test/ui, cluster lhui on 10.99.64.0/24).
#
#   make ui                     # npm ci (when package-lock.json changed) + build ui/dist
#   make test-ui                # typecheck, vitest, ui/dist fresh
#   make test-ui-e2e            # the browser suite (root); screenshots in bin/ui-e2e/screenshots
#   make test-ui-e2e UI_E2E_KEEP=1 PLAYWRIGHT_ARGS="--grep rebuild"   # reuse a running lhui cluster, one spec
#   make ui-dev LONGHORN_API=http://10.99.0.1:9500   # vite dev server with /v1 proxied to a manager
UI_DIR       := ui
UI_STAMP     := $(UI_DIR)/node_modules/.package-lock.stamp
UI_E2E_KEEP  ?=
UI_E2E_STATE := $(CACHE_DIR)/cluster-lhui
UI_E2E_NODE_MODE ?= containerd
UI_CLUSTER   := --name lhui --state-dir $(UI_E2E_STATE) --nodes 3 --subnet 10.99.64.0/24 --service-cidr 10.99.65.0/24 \
                --pod-cidr 10.109.0.0/16 --node-mode $(UI_E2E_NODE_MODE)

TEST_STEPS += test-ui test-ui-e2e

.PHONY: ui ui-deps ui-dev test-ui verify-ui test-ui-e2e ui-e2e-down

# npm ci only when package-lock.json is newer than the last install.
$(UI_STAMP): $(UI_DIR)/package-lock.json $(UI_DIR)/package.json
	@command -v npm >/dev/null || { echo "npm not found: install Node 20 (node, npm)"; exit 1; }
	cd $(UI_DIR) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
	@touch $@

ui-deps: $(UI_STAMP) ## install the UI's npm packages (npm ci)

ui: ui-deps ## build ui/dist from ui/src (typecheck + vite build)
	cd $(UI_DIR) && npm run --silent build

ui-dev: ui-deps ## vite dev server (LONGHORN_API=http://MANAGER:9500)
	cd $(UI_DIR) && npx vite --host 127.0.0.1

test-ui: ui-deps ## UI component tests (vitest) and the check that ui/dist is fresh
	cd $(UI_DIR) && npx tsc -b && npx vitest run
	@$(MAKE) --no-print-directory verify-ui

verify-ui: ui ## fail when the committed ui/dist differs from what ui/src builds
	@test -z "$$(git status --porcelain -- $(UI_DIR)/dist)" || { git status --porcelain -- $(UI_DIR)/dist; \
	  echo "verify-ui: ui/dist is stale; run make ui and commit ui/dist"; exit 1; }

test-ui-e2e: packages build lhcluster lhpause testbin $(CLUSTER_IMAGE_DEPS) ui-deps ## Playwright + chromium against a local 3-node cluster (root)
	@command -v chromium >/dev/null || { echo "chromium not found: apt-get install chromium (see .ci/packages)"; exit 1; }
	@rc=0; $(TEST_ENV) LONGHORN_UI_E2E=1 LONGHORN_UI_E2E_KEEP=$(UI_E2E_KEEP) LONGHORN_BINARY=$(BIN)/longhorn \
	  LHCLUSTER_BINARY=$(BIN)/lhcluster \
	  LHPAUSE_BINARY=$(BIN)/lhpause LONGHORN_IMAGE_ARCHIVE=$(abspath $(CLUSTER_IMAGE)) LONGHORN_UI_E2E_NODE_MODE=$(UI_E2E_NODE_MODE) PLAYWRIGHT_ARGS='$(PLAYWRIGHT_ARGS)' nice -n 10 \
	  go test -count=1 -p 1 -timeout 25m -v ./test/ui/ || rc=$$?; \
	if [ "$(UI_E2E_KEEP)" != 1 ] && [ -e $(UI_E2E_STATE)/state.json ]; then echo "== ui e2e: cluster lhui left behind; removing it"; \
	  flock $(or $(TMPDIR),/tmp)/lhcluster-test.lock $(BIN)/lhcluster down $(UI_CLUSTER) || rc=1; fi; \
	exit $$rc

ui-e2e-down: lhcluster ## remove the UI e2e cluster (after UI_E2E_KEEP=1)
	$(BIN)/lhcluster down $(UI_CLUSTER)
