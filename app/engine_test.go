package app

import (
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{"": 0, "4096": 4096, "1k": 1024, "10Mi": 10 << 20, "2GiB": 2 << 30, "1t": 1 << 40, "3G": 3 << 30}
	for in, want := range good {
		if got, err := parseSize("size", in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"x", "-1", "1.5G", "99999999999t"} {
		if _, err := parseSize("size", in); err == nil || !strings.Contains(err.Error(), "--size") {
			t.Errorf("parseSize(%q) error %v, want one naming --size", in, err)
		}
	}
}

func TestReorderArgs(t *testing.T) {
	defs := []cli.Flag{&cli.StringFlag{Name: "size"}, &cli.BoolFlag{Name: "disable-revision-counter", Aliases: []string{"disableRevCounter"}},
		&cli.StringSliceFlag{Name: "replica"}}
	flags, pos, err := reorderArgs(defs, []string{"vol", "--size", "10", "--disableRevCounter", "--replica", "tcp://a:1", "--replica=tcp://b:2", "--", "--x"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--size", "10", "--disableRevCounter", "--replica", "tcp://a:1", "--replica=tcp://b:2"}; !reflect.DeepEqual(flags, want) {
		t.Fatalf("flags %v, want %v", flags, want)
	}
	if want := []string{"vol", "--x"}; !reflect.DeepEqual(pos, want) {
		t.Fatalf("positional %v, want %v", pos, want)
	}
	if _, _, err := reorderArgs(defs, []string{"vol", "--bogus"}); err == nil {
		t.Fatal("unknown flag accepted")
	}
	if _, _, err := reorderArgs(defs, []string{"vol", "--size"}); err == nil {
		t.Fatal("missing value accepted")
	}
}

func TestEngineControllerFlagsAfterVolume(t *testing.T) {
	var got string
	var size string
	cmd := interspersed(&cli.Command{Name: "controller", Flags: []cli.Flag{&cli.StringFlag{Name: "size"}},
		Action: func(c *cli.Context) error { got, size = c.Args().First(), c.String("size"); return nil }})
	a := &cli.App{Commands: []*cli.Command{cmd}}
	if err := a.Run([]string{"longhorn", "controller", "vol1", "--size", "4096"}); err != nil {
		t.Fatal(err)
	}
	if got != "vol1" || size != "4096" {
		t.Fatalf("volume %q size %q", got, size)
	}
	if len(engineControllerCmd.Flags) < 10 {
		t.Fatalf("controller flags %d", len(engineControllerCmd.Flags))
	}
	found := false
	for _, f := range engineControllerCmd.Flags {
		for _, n := range f.Names() {
			found = found || n == "nbd-listen"
		}
	}
	if !found {
		t.Fatal("frontend flag --nbd-listen not added to the controller command")
	}
}
