package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// spawner runs functions on one goroutine locked to its OS thread for the
// life of the Env. Children started from it carry a parent-death signal
// (PR_SET_PDEATHSIG), which Linux ties to the thread that forked them: a
// thread that nobody else can lock and end keeps the children alive exactly
// as long as the test binary.
type spawner struct {
	reqs chan func()
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan func())}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for f := range s.reqs {
			f()
		}
	}()
	return s
}

// do runs f on the spawner's thread and returns its error.
func (s *spawner) do(f func() error) error {
	errc := make(chan error, 1)
	s.reqs <- func() { errc <- f() }
	return <-errc
}

func (s *spawner) close() { close(s.reqs) }

// pdeathWrapper writes a small script in the scratch dir that execs bin
// under `setpriv --pdeathsig KILL`, so a process envtest starts (envtest sets
// no parent-death signal itself) dies with the test binary. Without setpriv
// it returns bin unchanged.
func (e *Env) pdeathWrapper(bin string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return bin, nil
	}
	dir := filepath.Join(e.Dir, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testenv: wrapper dir: %w", err)
	}
	path := filepath.Join(dir, filepath.Base(bin))
	script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", shellQuote(setpriv), shellQuote(bin))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("testenv: wrapper: %w", err)
	}
	return path, nil
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
