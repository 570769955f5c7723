package process

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateSpec(t *testing.T) {
	ok := Spec{Name: "pvc-1-r-0a1b", Binary: "/bin/longhorn", Args: []string{"engine", "replica"}, PortCount: 10, PortArgs: []string{"--listen,127.0.0.1:"}}
	mod := func(f func(*Spec)) Spec { s := cloneSpec(ok); f(&s); return s }
	cases := []struct {
		name    string
		spec    Spec
		wantErr string // substring naming the field; "" = valid
	}{
		{"valid", ok, ""},
		{"no port args", mod(func(s *Spec) { s.PortArgs = nil }), ""},
		{"max name", mod(func(s *Spec) { s.Name = strings.Repeat("a", MaxNameLength) }), ""},
		{"empty name", mod(func(s *Spec) { s.Name = "" }), "name is required"},
		{"long name", mod(func(s *Spec) { s.Name = strings.Repeat("a", MaxNameLength+1) }), "at most 253"},
		{"slash in name", mod(func(s *Spec) { s.Name = "../etc" }), "not allowed"},
		{"leading dash", mod(func(s *Spec) { s.Name = "-x" }), "not allowed"},
		{"space", mod(func(s *Spec) { s.Name = "a b" }), "not allowed"},
		{"no binary", mod(func(s *Spec) { s.Binary = "" }), "binary is required"},
		{"port count 0", mod(func(s *Spec) { s.PortCount = 0 }), "port_count is 0, want 1..50"},
		{"port count too large", mod(func(s *Spec) { s.PortCount = 51 }), "port_count is 51"},
		{"more port args than ports", mod(func(s *Spec) { s.PortCount = 1; s.PortArgs = []string{"a,", "b,"} }), "more than port_count"},
		{"empty port arg", mod(func(s *Spec) { s.PortArgs = []string{""} }), "port_args[0] is empty"},
		{"NUL in arg", mod(func(s *Spec) { s.Args = []string{"a\x00b"} }), "args[0] contains a NUL"},
		{"long arg", mod(func(s *Spec) { s.Args = []string{strings.Repeat("x", MaxArgLength+1)} }), "args[0] is 4097 bytes"},
		{"too many args", mod(func(s *Spec) { s.Args = make([]string, MaxArgs) }), "at most 256"},
	}
	for _, c := range cases {
		err := ValidateSpec(c.spec, DefaultMaxPortCount)
		if c.wantErr == "" {
			if err != nil {
				t.Errorf("%s: unexpected error %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: error %v, want ErrInvalidArgument containing %q", c.name, err, c.wantErr)
		}
	}
}

func TestBuildArgsAndReadyAddresses(t *testing.T) {
	cases := []struct {
		portArgs  []string
		wantArgs  []string
		wantAddrs []string
	}{
		{nil, []string{"x"}, []string{"127.0.0.1:2000"}},
		{[]string{"--listen,:"}, []string{"x", "--listen", ":2000"}, []string{"127.0.0.1:2000"}},
		{[]string{"--listen,10.0.0.5:"}, []string{"x", "--listen", "10.0.0.5:2000"}, []string{"10.0.0.5:2000"}},
		{[]string{"--listen,0.0.0.0:"}, []string{"x", "--listen", "0.0.0.0:2000"}, []string{"127.0.0.1:2000"}},
		{[]string{"--listen,[::1]:"}, []string{"x", "--listen", "[::1]:2000"}, []string{"[::1]:2000"}},
		{[]string{"--a,127.0.0.1:", "--b="}, []string{"x", "--a", "127.0.0.1:2000", "--b=2001"}, []string{"127.0.0.1:2000", "127.0.0.1:2001"}},
	}
	for _, c := range cases {
		s := Spec{Name: "n", Binary: "b", Args: []string{"x"}, PortCount: 2, PortArgs: c.portArgs}
		if got := BuildArgs(s, 2000); !slices.Equal(got, c.wantArgs) {
			t.Errorf("BuildArgs(%q) = %q, want %q", c.portArgs, got, c.wantArgs)
		}
		if got := ReadyAddresses(s, 2000); !slices.Equal(got, c.wantAddrs) {
			t.Errorf("ReadyAddresses(%q) = %q, want %q", c.portArgs, got, c.wantAddrs)
		}
	}
}
