// Package meta holds build metadata injected with -ldflags by the Makefile.
package meta

// Version, GitCommit and BuildDate are set at link time:
//
//	-X github.com/longhorn-go/longhorn/meta.Version=v0.1.0
//
// They keep their placeholder values in `go test` and `go run` builds.
var (
	Version   = "v0.0.0-dev"
	GitCommit = "unknown"
	BuildDate = "unknown"
)

// VersionString returns "VERSION (commit COMMIT, built DATE)" for `longhorn --version`.
func VersionString() string {
	return Version + " (commit " + GitCommit + ", built " + BuildDate + ")"
}
