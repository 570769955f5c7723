# Replica store (engine/replica, engine/sparse): Go benchmarks and the long
# randomized model test. The short model test runs in `make test`.
REPLICA_BENCH_MIB  ?= 256
REPLICA_BENCH_TIME ?= 2s
REPLICA_SEEDS      ?= 20
REPLICA_OPS        ?= 5000

.PHONY: bench-replica test-replica-long
bench-replica: ## replica store benchmarks: 4k random read/write, 128k sequential, vs a raw file (REPLICA_BENCH_MIB=256)
	go test -run '^$$' -bench BenchmarkStore -benchtime $(REPLICA_BENCH_TIME) ./engine/replica/ -args -replica.bench-mib=$(REPLICA_BENCH_MIB)

test-replica-long: ## long randomized model test of the replica store (REPLICA_SEEDS=20 REPLICA_OPS=5000)
	go test -count=1 -run TestRandomizedModel -timeout 3h ./engine/replica/ -args -replica.seeds=$(REPLICA_SEEDS) -replica.ops=$(REPLICA_OPS)
