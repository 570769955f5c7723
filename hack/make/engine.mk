# Engine (engine/dataconn, engine/controller, engine/syncagent, engine/replicasrv):
# Go benchmarks of the data path and a fuzzing run. The engine's tests run in
# `make test` (engine/enginetest starts real processes with LONGHORN_BINARY).
ENGINE_BENCH_N ?= 20000x
ENGINE_FUZZTIME ?= 30s

.PHONY: bench-engine fuzz-engine
bench-engine: ## engine data path: dataconn and replicated I/O, with syscalls and CPU per request (ENGINE_BENCH_N=20000x)
	go test -run '^$$' -bench . -benchtime $(ENGINE_BENCH_N) ./engine/dataconn/ ./engine/controller/

fuzz-engine: ## fuzz the engine's network parsers for ENGINE_FUZZTIME each (dataconn, ssync)
	go test -run '^$$' -fuzz '^FuzzServerConn$$' -fuzztime $(ENGINE_FUZZTIME) ./engine/dataconn/
	go test -run '^$$' -fuzz '^FuzzClientResponses$$' -fuzztime $(ENGINE_FUZZTIME) ./engine/dataconn/
	go test -run '^$$' -fuzz '^FuzzParseInterval$$' -fuzztime $(ENGINE_FUZZTIME) ./engine/syncagent/
