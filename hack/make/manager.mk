# Manager (controllers, scheduler, webhook). `make test` runs all of it; these
# targets run the manager's parts alone.

.PHONY: test-manager-unit test-manager
test-manager-unit: ## scheduler, state machines, controllers (fake clientsets), webhook
	go test $(GO_TEST_FLAGS) ./scheduler/... ./controller/... ./webhook/...

test-manager: build testbin ## three managers + instance managers against a real API server (test/manager)
	$(TEST_ENV) LONGHORN_BINARY=$(BIN)/longhorn go test $(GO_TEST_FLAGS) -v ./test/manager/
