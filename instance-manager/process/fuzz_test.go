package process

import (
	"strings"
	"testing"
)

// FuzzSpec feeds request fields as they arrive from the network through
// validation and, when valid, argument building: no panics, and a valid spec
// yields one ready address per port arg.
func FuzzSpec(f *testing.F) {
	f.Add("pvc-1-r-0", "/bin/longhorn", "engine\x1freplica", int32(10), "--listen,127.0.0.1:")
	f.Add("e", "b", "", int32(1), "--listen,[::1]:\x1f--port,")
	f.Add("", "", "", int32(0), ",,,")
	f.Add("a..b", "x", "\x00", int32(-5), "--listen,:")
	f.Fuzz(func(t *testing.T, name, binary, args string, ports int32, portArgs string) {
		s := Spec{Name: name, Binary: binary, Args: strings.Split(args, "\x1f"), PortCount: ports, PortArgs: strings.Split(portArgs, "\x1f")}
		if err := ValidateSpec(s, DefaultMaxPortCount); err != nil {
			return
		}
		if got := ReadyAddresses(s, 10000); len(got) != max(len(s.PortArgs), 1) {
			t.Fatalf("%d ready addresses for %d port args", len(got), len(s.PortArgs))
		}
		if got := BuildArgs(s, 10000); len(got) < len(s.Args)+len(s.PortArgs) {
			t.Fatalf("args %q lost entries", got)
		}
	})
}

func FuzzParseSignalAndPortRange(f *testing.F) {
	for _, s := range []string{"SIGHUP", "term", "", "SIGKILL", "9", "10000-30000", "1-1", "-", "99999-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if sig, err := ParseSignal(s); err == nil && sig == 0 {
			t.Fatalf("ParseSignal(%q) = 0 without error", s)
		}
		if r, err := ParsePortRange(s); err == nil && (r.Start < 1 || r.End > 65535 || r.Start > r.End) {
			t.Fatalf("ParsePortRange(%q) = %v", s, r)
		}
	})
}
