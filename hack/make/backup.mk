# Backups (issue 17): the backupstore (engine/backupstore), backup and restore
# in the engine, the manager's backup controllers. The tests run an S3 server
# (versitygw, built from the Go module proxy) and nfs-ganesha (Debian
# package) that they start and stop themselves.
VERSITYGW := $(shell hack/testbin/backup-servers.sh --path "$(CACHE_DIR)")

TEST_DEPS += testbin-backup
TEST_ENV  += LONGHORN_VERSITYGW=$(VERSITYGW)

.PHONY: testbin-backup
testbin-backup: ## build or reuse the backup tests' S3 server (versitygw) in $(CACHE_DIR)
	@hack/testbin/backup-servers.sh "$(CACHE_DIR)"

# Backup benchmark: a 1 GiB volume of random data to the local S3 server,
# full and 10 % incremental backup and restore, against a plain minio-go
# upload/download of the same bytes in the same run.
BENCH_BACKUP_SIZE  ?= 1073741824
BENCH_BACKUP_FLAGS ?=

.PHONY: bench-backup
bench-backup: testbin-backup ## backup/restore throughput to the local S3 server vs a plain upload (BENCH_BACKUP_SIZE=1073741824)
	LONGHORN_VERSITYGW=$(VERSITYGW) go run ./hack/bench/backup -size $(BENCH_BACKUP_SIZE) $(BENCH_BACKUP_FLAGS)
