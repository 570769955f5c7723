package nodeagent

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ErrImage is wrapped by errors about a container's image or command.
var ErrImage = errors.New("cannot run container image")

// ImageMap maps container images to local binaries: there is no container
// runtime, so an image only names which program to run.
//
// A pattern is an image reference, optionally ending in "*" to match any
// suffix ("longhornio/longhorn:*"). References are compared after dropping a
// "docker.io/" registry and a "library/" namespace. The longest matching
// pattern wins.
type ImageMap struct {
	rules []imageRule
}

type imageRule struct {
	pattern string // normalized, maybe ending in "*"
	binary  string // absolute path
}

// NewImageMap builds an ImageMap from pattern -> binary. Binaries must be
// absolute paths; patterns must be non-empty and have "*" only at the end.
func NewImageMap(m map[string]string) (ImageMap, error) {
	var im ImageMap
	for p, b := range m {
		switch {
		case p == "" || strings.Contains(strings.TrimSuffix(p, "*"), "*"):
			return ImageMap{}, fmt.Errorf("%w: image pattern %q: want a reference with an optional trailing *", ErrImage, p)
		case !filepath.IsAbs(b):
			return ImageMap{}, fmt.Errorf("%w: image %q: binary %q is not an absolute path", ErrImage, p, b)
		}
		im.rules = append(im.rules, imageRule{pattern: normalizeImage(p), binary: b})
	}
	sort.Slice(im.rules, func(i, j int) bool { return len(im.rules[i].pattern) > len(im.rules[j].pattern) })
	return im, nil
}

func normalizeImage(ref string) string {
	ref = strings.TrimPrefix(ref, "docker.io/")
	return strings.TrimPrefix(ref, "library/")
}

// Binary returns the binary mapped to image, if any.
func (m ImageMap) Binary(image string) (string, bool) {
	img := normalizeImage(image)
	for _, r := range m.rules {
		if p, ok := strings.CutSuffix(r.pattern, "*"); ok {
			if strings.HasPrefix(img, p) {
				return r.binary, true
			}
		} else if img == r.pattern {
			return r.binary, true
		}
	}
	return "", false
}

// Argv returns the argument vector for a container, as a runtime would build
// it from the image's entrypoint, the container's command and args:
//   - mapped image, no command: [binary] + args (the binary is the entrypoint);
//   - mapped image, command[0] with the binary's base name (e.g. "longhorn"
//     or "/usr/local/bin/longhorn"): [binary] + command[1:] + args;
//   - otherwise command[0] is a host program (looked up in PATH when not
//     absolute): [path] + command[1:] + args.
//
// An unmapped image without a command is an error (no entrypoint known).
func (m ImageMap) Argv(image string, command, args []string, lookPath func(string) (string, error)) ([]string, error) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	bin, mapped := m.Binary(image)
	if len(command) == 0 {
		if !mapped {
			return nil, fmt.Errorf("%w: image %q is not in the image map and the container has no command", ErrImage, image)
		}
		return append([]string{bin}, args...), nil
	}
	argv := append(append([]string{""}, command[1:]...), args...)
	switch {
	case mapped && filepath.Base(command[0]) == filepath.Base(bin):
		argv[0] = bin
	case filepath.IsAbs(command[0]):
		argv[0] = command[0]
	default:
		p, err := lookPath(command[0])
		if err != nil {
			return nil, fmt.Errorf("%w: image %q: command %q not found on the node: %v", ErrImage, image, command[0], err)
		}
		argv[0] = p
	}
	return argv, nil
}

// Dirs returns the directories of the mapped binaries, for PATH.
func (m ImageMap) Dirs() []string {
	seen := map[string]bool{}
	var dirs []string
	for _, r := range m.rules {
		d := filepath.Dir(r.binary)
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return dirs
}
