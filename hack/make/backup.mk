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
