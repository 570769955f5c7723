// Package testproc is a tiny stand-in for engine and replica processes in
// tests of the instance manager: a test binary calls MaybeRun from TestMain,
// and when its first argument is Arg the binary acts as a listener process
// instead of running tests. It is started by the process manager like any
// binary, with Arg followed by flags:
//
//	--listen ADDR       listen on ADDR (repeatable); accepted connections are closed
//	--delay DUR         wait before listening
//	--exit-after DUR    exit with --exit-code after DUR
//	--exit-code N       exit status for --exit-after (default 1)
//	--ignore-term       ignore SIGTERM and SIGHUP (forces SIGKILL escalation)
//	--lines N           print N numbered lines to stdout first
package testproc

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Arg, as the first argument, switches a test binary into listener mode.
const Arg = "--testproc"

type listens []string

func (l *listens) String() string     { return fmt.Sprint(*l) }
func (l *listens) Set(s string) error { *l = append(*l, s); return nil }

// MaybeRun runs the listener and exits when the first argument is Arg;
// otherwise it returns.
func MaybeRun() {
	if len(os.Args) < 2 || os.Args[1] != Arg {
		return
	}
	os.Exit(run(os.Args[2:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("testproc", flag.ContinueOnError)
	var addrs listens
	fs.Var(&addrs, "listen", "address to listen on")
	delay := fs.Duration("delay", 0, "wait before listening")
	exitAfter := fs.Duration("exit-after", 0, "exit after this long")
	exitCode := fs.Int("exit-code", 1, "exit status for --exit-after")
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM and SIGHUP")
	lines := fs.Int("lines", 0, "lines to print")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sigs := make(chan os.Signal, 1)
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
	} else {
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	}
	for i := 0; i < *lines; i++ {
		fmt.Printf("testproc line %d\n", i)
	}
	time.Sleep(*delay)
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testproc: %v\n", err)
			return 3
		}
		go accept(l)
	}
	fmt.Printf("testproc: listening on %v\n", addrs)
	var exit <-chan time.Time
	if *exitAfter > 0 {
		exit = time.After(*exitAfter)
	}
	select {
	case s := <-sigs:
		fmt.Printf("testproc: got %v, exiting\n", s)
		return 0
	case <-exit:
		fmt.Printf("testproc: exiting with %d\n", *exitCode)
		return *exitCode
	}
}

func accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}
