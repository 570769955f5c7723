//go:build tools

// Package versitygw pins the S3 server the backup tests run against
// (github.com/versity/versitygw, posix backend). hack/testbin/backup-servers.sh
// builds its command from this module; nothing imports this file.
package versitygw

import _ "github.com/versity/versitygw/cmd/versitygw"
