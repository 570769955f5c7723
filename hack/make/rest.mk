# REST /v1 API (api/): the idle WebSocket benchmark.
.PHONY: bench-api
bench-api: ## memory and goroutines of 500 idle /v1/ws clients vs 500 idle HTTP keep-alive connections (same run)
	go test -run '^$$' -bench BenchmarkIdleStreams -benchtime=1x -count=3 ./api
