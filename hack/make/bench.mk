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

# Scale benchmark (issue 22): cost per volume (1, 10, 50 volumes through one
# instance manager), rebuild throughput (1 GiB and 4 GiB of data) and part 3,
# the control plane under load on a local 3-node cluster (real nodes, the
# product image and deploy/longhorn.yaml, as make e2e; root): 300 volumes, 30
# attached, a manager pod killed. The default measures what the issue asks
# (budget: parts 1-3 under 20 minutes on 2 cores; the run prints each part's
# wall time against it); A/B arms are flags. Part 3 runs on the e2e share
# (E2E_NAME and address ranges of e2e.mk, lhe2e by default, under the same
# machine-wide lock); a helper passes its own share, e.g. E2E_NAME=lhcpb
# E2E_SUBNET=10.99.80.0/24 E2E_SVC_CIDR=10.99.81.0/24 E2E_POD_CIDR=10.108.0.0/16
# Quick run: make bench-scale SCALE_FLAGS='-volumes 1,10 -rebuild-data 268435456'
#            make bench-scale SCALE_PARTS=3 SCALE_FLAGS='-cp-volumes 60 -cp-attach 6'
# A/B arms:  SCALE_FLAGS='-variants all' (part 1: also the bench starting the
#            processes itself, and without the memory trim), '-rebuild-limit 40'
#            '-longhorn-alt BIN' and '-rebuild-counter' (part 2: the revision
#            counter on; parts 1-2 run without it by default, as the product's
#            v1 volumes do), '-cp-alt-image ARCHIVE' (part 3)
SCALE_PARTS ?= 1,2,3
SCALE_JSON  ?= $(BIN)/bench-scale.json
SCALE_FLAGS ?=
SCALE_CP    = $(findstring 3,$(SCALE_PARTS))

.PHONY: bench-scale
bench-scale: build $(if $(SCALE_CP),packages lhcluster lhpause testbin $(CLUSTER_IMAGE_DEPS)) ## scale benchmark: memory/CPU per volume, rebuild throughput, control plane on a local cluster (SCALE_PARTS=1,2,3; part 3 needs root)
	go run ./hack/bench/scale -longhorn $(BIN)/longhorn -parts $(SCALE_PARTS) -json $(SCALE_JSON) \
		$(if $(SCALE_CP),-cluster-name $(E2E_NAME) -cluster-subnet $(E2E_SUBNET) -cluster-service-cidr $(E2E_SVC_CIDR) \
		-cluster-pod-cidr $(E2E_POD_CIDR) -cluster-state $(E2E_STATE) -cluster-assets $(TESTBIN_ASSETS) -lhcluster $(BIN)/lhcluster \
		-lhpause $(BIN)/lhpause -image-archive $(abspath $(CLUSTER_IMAGE))) $(SCALE_FLAGS)
