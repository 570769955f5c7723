package engineapi

import (
	"os"
	"testing"

	"github.com/longhorn-go/longhorn/internal/testproc"
)

func TestMain(m *testing.M) {
	testproc.MaybeRun() // instance managers started by these tests run this binary as listener processes
	os.Exit(m.Run())
}
