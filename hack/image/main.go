// Command image builds the product image longhornio/longhorn:<tag> without
// Docker and without a registry (make image):
//
//  1. the base layer: a Debian root file system made by debootstrap with
//     the packages of package/node-packages.txt (the list package/Dockerfile
//     installs too), tarred without apt caches, logs and docs, cached in
//     CACHE/rootfs-<suite>-<key>/ where key hashes the suite, variant and
//     package list;
//  2. the binary layer: the longhorn binary as /usr/local/bin/longhorn;
//  3. both assembled with go-containerregistry into an OCI image whose
//     configuration matches package/Dockerfile, written as an OCI archive
//     (a tar of an OCI image layout) that `ctr images import` loads as
//     docker.io/longhornio/longhorn:<tag>.
//
// Usage:
//
//	image -binary bin/images/longhorn -packages package/node-packages.txt \
//	      -ref longhornio/longhorn:v0.1.0 -out bin/images/longhorn.oci.tar \
//	      -cache ~/.cache/longhorn-testbed
//
// A warm build (base layer cached) only writes the binary layer and the
// archive. Debootstrap needs root and Debian's mirror.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Options of one build.
type Options struct {
	Binary string // the longhorn binary to put in the image
	// ExtraBins are more executables put beside it in /usr/local/bin (the
	// CSI sidecars: make image passes $(IMAGE_EXTRA_BINS), hack/make/csi.mk).
	ExtraBins []string
	Packages  string // package list file
	Ref       string // image reference, e.g. longhornio/longhorn:v0.1.0
	Out       string // OCI archive to write
	Cache     string // cache directory of base layers
	Suite     string // Debian release
	Mirror    string // Debian mirror
	Version   string // org.opencontainers.image.version label
	Revision  string // org.opencontainers.image.revision label
}

func main() {
	var o Options
	home, _ := os.UserHomeDir()
	flag.StringVar(&o.Binary, "binary", "bin/images/longhorn", "longhorn binary to add")
	flag.Func("extra-bin", "another executable for /usr/local/bin (repeatable)", func(v string) error {
		o.ExtraBins = append(o.ExtraBins, v)
		return nil
	})
	flag.StringVar(&o.Packages, "packages", "package/node-packages.txt", "Debian packages of the base layer, one per line")
	flag.StringVar(&o.Ref, "ref", "longhornio/longhorn:latest", "image reference")
	flag.StringVar(&o.Out, "out", "bin/images/longhorn.oci.tar", "OCI archive to write")
	flag.StringVar(&o.Cache, "cache", filepath.Join(home, ".cache", "longhorn-testbed"), "cache directory")
	flag.StringVar(&o.Suite, "suite", "bookworm", "Debian release of the base layer")
	flag.StringVar(&o.Mirror, "mirror", "http://deb.debian.org/debian", "Debian mirror")
	flag.StringVar(&o.Version, "version", "", "image version label (default: the ref's tag)")
	flag.StringVar(&o.Revision, "revision", "", "git commit label")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Printf("image [%3ds] %s\n", int(time.Since(start).Seconds()), fmt.Sprintf(format, args...))
	}
	if err := Build(ctx, o, logf); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// Build makes the image described by o (see the package comment), printing
// progress through logf.
func Build(ctx context.Context, o Options, logf func(string, ...any)) error {
	start := time.Now()
	full, tag, err := NormalizeRef(o.Ref)
	if err != nil {
		return err
	}
	f, err := os.Open(o.Packages)
	if err != nil {
		return err
	}
	pkgs, err := ParsePackages(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", o.Packages, err)
	}
	base := Base{Suite: o.Suite, Variant: "minbase", Mirror: o.Mirror, Packages: pkgs}
	baseLayer, err := base.cachedBase(ctx, o.Cache, logf)
	if err != nil {
		return err
	}
	if err := checkGlibc(o.Binary, baseLayer.info.Glibc); err != nil {
		return err
	}
	t := time.Now()
	binLayerPath := o.Out + ".binary-layer.tar.gz"
	defer os.Remove(binLayerPath)
	for _, e := range o.ExtraBins {
		if err := checkGlibc(e, baseLayer.info.Glibc); err != nil {
			return err
		}
	}
	binLayer, err := binaryLayer(binLayerPath, o.Binary, o.ExtraBins...)
	if err != nil {
		return err
	}
	logf("binary layer: %s (+%d more), %d MiB compressed (%.1fs)", o.Binary, len(o.ExtraBins), binLayer.info.Size>>20, time.Since(t).Seconds())
	version := o.Version
	if version == "" {
		version = tag
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "longhorn",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.base.name":   "debian:" + o.Suite,
		"io.longhorn-go.image.node-packages":   strings.Join(pkgs, ","),
		"org.opencontainers.image.description": "Longhorn-faithful block storage: manager, instance manager, engine, CSI",
	}
	if o.Revision != "" {
		labels["org.opencontainers.image.revision"] = o.Revision
	}
	baseHistory := fmt.Sprintf("debootstrap --variant=%s --include=%s %s", base.Variant, strings.Join(pkgs, ","), base.Suite)
	img, err := assemble(baseLayer, binLayer, imageConfig(time.Now().UTC().Truncate(time.Second), labels), baseHistory)
	if err != nil {
		return err
	}
	t = time.Now()
	if err := WriteArchive(o.Out, img, o.Ref); err != nil {
		return err
	}
	fi, err := os.Stat(o.Out)
	if err != nil {
		return err
	}
	d, _ := img.Digest()
	logf("wrote %s: %s (%s), %d MiB (%.1fs); built in %.1fs", o.Out, full, d.String()[:19], fi.Size()>>20,
		time.Since(t).Seconds(), time.Since(start).Seconds())
	return nil
}
