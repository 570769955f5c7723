# Size and complexity budgets (docs/style.md): lines per file and per function,
# cognitive complexity per function (gocognit) and nested-if complexity
# (nestif), measured by hack/budgets (its own module, so its dependencies stay
# out of go.mod). Part of `make verify`, and a prerequisite of `make test` so
# CI holds them.
.PHONY: budgets
budgets: ## fail when a file, function or nested if is over its size or complexity budget
	@echo "== budgets"
	@big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 {print}'); \
	  test -z "$$big" || { echo "$$big"; echo "budgets: tracked files over 1 MiB (build outputs or data a script can make again belong outside git)"; exit 1; }
	go -C hack/budgets test -count=1 .
	go -C hack/budgets run . $(CURDIR)

TEST_DEPS += budgets
