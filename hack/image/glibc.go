package main

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// RequiredGlibc returns the newest GLIBC_x.y symbol version the ELF binary
// at path imports ("2.34"), or "" for a static binary (no dynamic symbols).
func RequiredGlibc(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	syms, err := f.ImportedSymbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	newest := ""
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Version, "GLIBC_"); ok && CompareVersions(v, newest) > 0 {
			newest = v
		}
	}
	return newest, nil
}

// CompareVersions compares dotted numeric versions ("2.36" vs "2.4"):
// -1, 0 or 1; a missing or non-numeric part counts as 0, "" is the oldest.
func CompareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		x, y := part(pa, i), part(pb, i)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func part(p []string, i int) int {
	if i >= len(p) {
		return -1
	}
	n, err := strconv.Atoi(p[i])
	if err != nil {
		return 0
	}
	return n
}

// DpkgVersion returns the upstream version ("2.36" of "2.36-9+deb12u10") of
// package pkg in a dpkg status file (var/lib/dpkg/status, deb822 stanzas),
// or "" when it is not installed.
func DpkgVersion(status io.Reader, pkg string) (string, error) {
	sc := bufio.NewScanner(status)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	in := false
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "":
			in = false
		case strings.HasPrefix(l, "Package: "):
			in = strings.TrimPrefix(l, "Package: ") == pkg
		case in && strings.HasPrefix(l, "Version: "):
			v := strings.TrimPrefix(l, "Version: ")
			if _, rest, ok := strings.Cut(v, ":"); ok { // epoch
				v = rest
			}
			v, _, _ = strings.Cut(v, "-")
			return v, nil
		}
	}
	return "", sc.Err()
}

// checkGlibc refuses a dynamically linked binary that needs a newer glibc
// than the base layer has (it would not start in the image).
func checkGlibc(bin, baseGlibc string) error {
	need, err := RequiredGlibc(bin)
	if err != nil || need == "" {
		return err
	}
	if baseGlibc == "" {
		return fmt.Errorf("%s is dynamically linked (glibc %s) and the base layer records no glibc version: rebuild the base or build with IMAGE_CGO=0", bin, need)
	}
	if CompareVersions(need, baseGlibc) > 0 {
		return fmt.Errorf("%s needs glibc %s, the image has %s: build it static (make image IMAGE_CGO=0)", bin, need, baseGlibc)
	}
	return nil
}
