# Instance manager and engineapi (issue 5).
IM_PKGS := ./instance-manager/... ./engineapi/...

.PHONY: test-im fuzz-im
test-im: build ## instance manager + engineapi tests (real processes, real longhorn binary)
	$(TEST_ENV) LONGHORN_BINARY=$(BIN)/longhorn go test $(GO_TEST_FLAGS) $(IM_PKGS)

fuzz-im: ## run the instance manager fuzz tests for 30 s each
	go test -run '^$$' -fuzz '^FuzzSpec$$' -fuzztime 30s ./instance-manager/process/
	go test -run '^$$' -fuzz '^FuzzParseSignalAndPortRange$$' -fuzztime 30s ./instance-manager/process/
	go test -run '^$$' -fuzz '^FuzzValidateEngineAddress$$' -fuzztime 30s ./instance-manager/server/
	go test -run '^$$' -fuzz '^FuzzRedact$$' -fuzztime 30s ./instance-manager/server/
