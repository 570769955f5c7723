package app

import (
	"fmt"
	"sort"

	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

// frontendFactory builds one kind of engine frontend from the flags of
// `longhorn engine controller`. Each frontend registers one from an init function
// in its own file (app/frontend_nbd.go, app/frontend_iscsi.go), so adding a
// frontend never edits the controller command.
type frontendFactory struct {
	// name is the value of --frontend that selects it ("nbd", "iscsi").
	name string
	// flags are added to `longhorn engine controller` (e.g. --nbd-listen).
	flags []cli.Flag
	// build creates a stopped frontend from the parsed flags.
	build func(c *cli.Context) (frontend.Frontend, error)
}

var frontendFactories = map[string]frontendFactory{}

// registerFrontend adds a frontend kind; it panics on a duplicate name, which is
// a programming error caught by any test of this package.
func registerFrontend(f frontendFactory) {
	if _, dup := frontendFactories[f.name]; dup {
		panic("duplicate frontend " + f.name)
	}
	frontendFactories[f.name] = f
	engineControllerCmd.Flags = append(engineControllerCmd.Flags, f.flags...)
}

// frontendFlags returns the flags of every registered frontend, in name order.
func frontendFlags() []cli.Flag {
	var out []cli.Flag
	for _, name := range frontendNames() {
		out = append(out, frontendFactories[name].flags...)
	}
	return out
}

// frontendNames lists the registered frontend names, sorted.
func frontendNames() []string {
	names := make([]string, 0, len(frontendFactories))
	for n := range frontendFactories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// newFrontend returns a builder for the frontend named by --frontend or by a
// later VolumeFrontendStart call. An empty name means no frontend (Longhorn's
// maintenance mode) and returns (nil, nil).
func newFrontend(c *cli.Context, name string) (frontend.Frontend, error) {
	if name == "" {
		return nil, nil
	}
	f, ok := frontendFactories[name]
	if !ok {
		return nil, fmt.Errorf("frontend %q: unknown, want one of %v or empty", name, frontendNames())
	}
	return f.build(c)
}
