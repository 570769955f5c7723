package app

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

// buildFrontend parses args as `longhorn engine controller` flags would and
// builds the named frontend.
func buildFrontend(t *testing.T, name string, args ...string) (frontend.Frontend, error) {
	t.Helper()
	var f frontend.Frontend
	var ferr error
	a := &cli.App{
		Flags: frontendFlags(),
		Action: func(c *cli.Context) error {
			f, ferr = newFrontend(c, name)
			return nil
		},
	}
	if err := a.Run(append([]string{"controller"}, args...)); err != nil {
		t.Fatal(err)
	}
	return f, ferr
}

func TestNBDFrontendRegistered(t *testing.T) {
	f, err := buildFrontend(t, "nbd", "--nbd-listen", "tcp:127.0.0.1:0")
	if err != nil || f == nil || f.FrontendName() != "nbd" || f.State() != "down" {
		t.Fatalf("nbd frontend: %v %v", f, err)
	}
	if _, err := buildFrontend(t, "nbd", "--nbd-listen", "udp:1.2.3.4:5"); err == nil || !strings.Contains(err.Error(), "--nbd-listen") {
		t.Fatalf("bad --nbd-listen: %v, want an error naming the flag", err)
	}
	if f, err := buildFrontend(t, ""); f != nil || err != nil {
		t.Fatalf("empty frontend: %v %v", f, err)
	}
}
