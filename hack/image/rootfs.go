package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// Base describes the root file system layer: a Debian release made by
// debootstrap with the node packages, tarred without caches and docs.
type Base struct {
	Suite    string   // Debian release, e.g. "bookworm"
	Variant  string   // debootstrap --variant, e.g. "minbase"
	Mirror   string   // Debian mirror URL (not part of the cache key)
	Packages []string // --include list, sorted, unique
}

// recipeVersion is part of the cache key: bump it when the way the root file
// system is made or filtered changes (excluded, debootstrap flags).
const recipeVersion = "3"

var packageRE = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

// ParsePackages reads a package list: one Debian package name per line;
// blank lines and lines starting with # are ignored. Errors name the line:
// an invalid package name, a duplicate, or an empty list.
func ParsePackages(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !packageRE.MatchString(l) {
			return nil, fmt.Errorf("line %d: %q is not a Debian package name", n, l)
		}
		if slices.Contains(out, l) {
			return nil, fmt.Errorf("line %d: package %s listed twice", n, l)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no packages listed")
	}
	slices.Sort(out)
	return out, nil
}

// Key is the cache key of the base layer: a hash of the suite, variant,
// package list and recipe version (12 hex digits).
func (b Base) Key() string {
	h := sha256.New()
	fmt.Fprintf(h, "recipe=%s\nsuite=%s\nvariant=%s\n", recipeVersion, b.Suite, b.Variant)
	for _, p := range b.Packages {
		fmt.Fprintf(h, "package=%s\n", p)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// CacheDir is the directory of the base layer in cache.
func (b Base) CacheDir(cache string) string {
	return filepath.Join(cache, "rootfs-"+b.Suite+"-"+b.Key())
}

// excluded reports whether rel (a slash path relative to the root file
// system, no leading slash) stays out of the layer: contents of the runtime
// mounts (/dev, /proc, /sys, /run, /tmp), apt's package cache and lists,
// logs, and docs, man pages and translations (as Debian's slim images drop
// them; copyright files stay). The directories themselves stay.
func excluded(rel string) bool {
	for _, dir := range []string{"dev", "proc", "sys", "run", "tmp", "var/tmp",
		"var/cache/apt", "var/lib/apt/lists", "var/log", "var/cache/debconf/templates.dat-old",
		"usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/groff", "usr/share/lintian"} {
		if strings.HasPrefix(rel, dir+"/") {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(rel, "usr/share/doc/"); ok {
		// Keep usr/share/doc/<pkg>/ and its copyright file.
		return strings.Contains(rest, "/") && !strings.HasSuffix(rest, "/copyright")
	}
	return false
}

// emptied are files whose contents come from the build host and that the
// container runtime replaces: they are written empty.
var emptied = map[string]bool{"etc/resolv.conf": true, "etc/hostname": true}

// Debootstrap runs debootstrap into dir (which must not exist), printing
// its progress lines through logf. Needs root.
func (b Base) Debootstrap(ctx context.Context, dir string, logf func(string, ...any)) error {
	if os.Geteuid() != 0 {
		return errors.New("debootstrap needs root (run make image as root)")
	}
	path, err := exec.LookPath("debootstrap")
	if err != nil {
		return errors.New("debootstrap not found: apt-get install debootstrap")
	}
	args := []string{"--variant=" + b.Variant, "--include=" + strings.Join(b.Packages, ","),
		"--components=main", b.Suite, dir, b.Mirror}
	logf("debootstrap %s", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	var tail []string
	steps := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		l := sc.Text()
		tail = append(tail, l)
		if len(tail) > 30 {
			tail = tail[1:]
		}
		if progressLine(l) {
			logf("debootstrap: %s", strings.TrimPrefix(l, "I: "))
		} else if steps++; steps%50 == 0 {
			logf("debootstrap: %d package steps (%s)", steps, strings.TrimPrefix(l, "I: "))
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("debootstrap %s: %w\n%s", b.Suite, err, strings.Join(tail, "\n"))
	}
	return nil
}

// progressLine picks the debootstrap lines worth printing: phases, not one
// line per package.
func progressLine(l string) bool {
	for _, p := range []string{"I: Retrieving", "I: Validating", "I: Extracting", "I: Unpacking ", "I: Configuring "} {
		if strings.HasPrefix(l, p) && !strings.HasPrefix(l, "I: Retrieving Release") &&
			!strings.HasPrefix(l, "I: Unpacking the base") && !strings.HasPrefix(l, "I: Configuring the base") {
			return false
		}
	}
	return true
}

// layerInfo is what the cache records about a built layer (layer.json).
type layerInfo struct {
	Digest   string   `json:"digest"` // sha256:... of the compressed file
	DiffID   string   `json:"diffID"` // sha256:... of the uncompressed tar
	Size     int64    `json:"size"`   // compressed bytes
	Packages []string `json:"packages,omitempty"`
	Suite    string   `json:"suite,omitempty"`
	Glibc    string   `json:"glibc,omitempty"` // upstream version of libc6 in the layer
}

// rootGlibc reads libc6's version from the root file system's dpkg status.
func rootGlibc(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, "var/lib/dpkg/status"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	return DpkgVersion(f, "libc6")
}

// cachedBase returns the base layer in cache, building it when it is
// missing: debootstrap into a temporary directory, tar + gzip it, record
// its digests, remove the directory. One build at a time per cache (flock).
func (b Base) cachedBase(ctx context.Context, cache string, logf func(string, ...any)) (*fileLayer, error) {
	dir := b.CacheDir(cache)
	if l, err := loadFileLayer(dir); err == nil {
		logf("base layer %s cached (%s, %d MiB)", filepath.Base(dir), l.info.Digest[:19], l.info.Size>>20)
		return l, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(cache, ".rootfs.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		logf("another image build holds %s; waiting", lock.Name())
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			return nil, err
		}
	}
	if l, err := loadFileLayer(dir); err == nil {
		return l, nil
	}
	logf("base layer %s not cached: building it (Debian %s, %d packages; cold: 1-3 minutes)", filepath.Base(dir), b.Suite, len(b.Packages))
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "rootfs")
	if err := b.Debootstrap(ctx, root, logf); err != nil {
		return nil, err
	}
	logf("tar + gzip the root file system")
	info, err := writeLayerFile(filepath.Join(tmp, layerFileName), gzip.DefaultCompression, func(w io.Writer) error {
		return TarTree(w, root, excluded, emptied)
	})
	if err != nil {
		return nil, err
	}
	info.Packages, info.Suite = b.Packages, b.Suite
	if info.Glibc, err = rootGlibc(root); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(tmp, layerInfoName), info); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(root); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	logf("base layer %s built: %d MiB compressed", filepath.Base(dir), info.Size>>20)
	return loadFileLayer(dir)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
