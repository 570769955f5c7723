# Data-plane benchmark (issue 3): kbench-style fio jobs against fio-direct,
# nbdkit, our NBD frontend, and the engine with 1 and 3 replicas.
# Quick run: make bench-dataplane BENCH_DURATION=5s BENCH_SIZE=268435456
# Subset:    make bench-dataplane BENCH_TARGETS=0,a,b BENCH_JOBS=randread-4k-qd1
BENCH_DURATION ?= 20s
BENCH_RAMP     ?= 2s
BENCH_SIZE     ?= 1073741824
BENCH_TARGETS  ?=
BENCH_JOBS     ?=
BENCH_DIR      ?=
BENCH_ROUNDS   ?= 1
BENCH_FLAGS    ?=

.PHONY: bench-dataplane
bench-dataplane: build ## data-plane fio benchmark vs fio-direct, nbdkit, engine 1 and 3 replicas (BENCH_DURATION=20s)
	go run ./hack/bench/dataplane -longhorn $(BIN)/longhorn -duration $(BENCH_DURATION) -ramp $(BENCH_RAMP) \
		-size $(BENCH_SIZE) -rounds $(BENCH_ROUNDS) $(if $(BENCH_TARGETS),-targets $(BENCH_TARGETS)) $(if $(BENCH_JOBS),-jobs $(BENCH_JOBS)) \
		$(if $(BENCH_DIR),-dir $(BENCH_DIR)) $(BENCH_FLAGS)

# Scale benchmark (issue 22): cost per volume (1, 10, 50 volumes, A/B of the
# start-up memory trim) and rebuild throughput (1 GiB and 4 GiB of data).
# Quick run: make bench-scale SCALE_FLAGS='-volumes 1,10 -rebuild-data 268435456'
SCALE_PARTS ?= 1,2
SCALE_JSON  ?= $(BIN)/bench-scale.json
SCALE_FLAGS ?=

.PHONY: bench-scale
bench-scale: build ## scale benchmark: memory/CPU per volume, rebuild throughput (SCALE_PARTS=1,2)
	go run ./hack/bench/scale -longhorn $(BIN)/longhorn -parts $(SCALE_PARTS) -json $(SCALE_JSON) $(SCALE_FLAGS)
