package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func TestParsePackages(t *testing.T) {
	got, err := ParsePackages(strings.NewReader("# c\n\nzlib1g\n  e2fsprogs  \nlibc6\n"))
	if err != nil || !slices.Equal(got, []string{"e2fsprogs", "libc6", "zlib1g"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for in, want := range map[string]string{
		"a b\n":            "line 1",
		"ok\nBad_Name\n":   "line 2",
		"x1\nx2\nx1\n":     "line 3: package x1 listed twice",
		"# only\n\n":       "no packages",
		"-dash\n":          "line 1",
		"iproute2;ls -l\n": "line 1",
	} {
		if _, err := ParsePackages(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

// The repository's list parses and holds the tools the node side runs.
func TestNodePackagesFile(t *testing.T) {
	pkgs := repoPackages(t)
	for _, p := range []string{"e2fsprogs", "xfsprogs", "util-linux", "open-iscsi", "nbd-client", "nfs-common", "ca-certificates"} {
		if !slices.Contains(pkgs, p) {
			t.Errorf("package/node-packages.txt lacks %s", p)
		}
	}
}

func repoPackages(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../package/node-packages.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pkgs, err := ParsePackages(f)
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestBaseKey(t *testing.T) {
	a := Base{Suite: "bookworm", Variant: "minbase", Mirror: "http://a", Packages: []string{"e2fsprogs", "kmod"}}
	b := a
	b.Mirror = "http://b"
	if a.Key() != b.Key() {
		t.Error("the mirror changed the key")
	}
	for _, c := range []Base{
		{Suite: "trixie", Variant: "minbase", Packages: a.Packages},
		{Suite: "bookworm", Variant: "buildd", Packages: a.Packages},
		{Suite: "bookworm", Variant: "minbase", Packages: []string{"e2fsprogs"}},
		{Suite: "bookworm", Variant: "minbase", Packages: []string{"e2fsprogs", "kmod", "procps"}},
	} {
		if c.Key() == a.Key() {
			t.Errorf("%+v has the key of %+v", c, a)
		}
	}
	if got := a.CacheDir("/c"); got != "/c/rootfs-bookworm-"+a.Key() || len(a.Key()) != 12 {
		t.Errorf("cache dir %s", got)
	}
}

func TestExcluded(t *testing.T) {
	for rel, want := range map[string]bool{
		"dev":                               false,
		"dev/null":                          true,
		"proc/1":                            true,
		"tmp/x":                             true,
		"var/lib/apt/lists/deb_Packages":    true,
		"var/lib/apt/lists":                 false,
		"var/cache/apt/archives/a.deb":      true,
		"var/log/dpkg.log":                  true,
		"var/lib/dpkg/status":               false,
		"usr/share/doc/e2fsprogs":           false,
		"usr/share/doc/e2fsprogs/copyright": false,
		"usr/share/doc/e2fsprogs/NEWS.gz":   true,
		"usr/share/man/man8/mkfs.8.gz":      true,
		"usr/share/locale/de/x.mo":          true,
		"usr/sbin/mkfs.ext4":                false,
		"etc/resolv.conf":                   false,
	} {
		if got := excluded(rel); got != want {
			t.Errorf("excluded(%q) = %v, want %v", rel, got, want)
		}
	}
}

// tarEntries reads a tar stream into name -> header (+ contents).
func tarEntries(t *testing.T, r io.Reader) (map[string]*tar.Header, map[string]string, []string) {
	t.Helper()
	hdrs, data := map[string]*tar.Header{}, map[string]string{}
	var order []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		hdrs[h.Name], data[h.Name] = h, string(b)
		order = append(order, h.Name)
	}
	return hdrs, data, order
}

func TestTarTree(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "dev/pts"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/bin/tool"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Link(filepath.Join(root, "usr/bin/tool"), filepath.Join(root, "usr/bin/tool2")))
	must(os.Symlink("tool", filepath.Join(root, "usr/bin/alias")))
	must(os.WriteFile(filepath.Join(root, "dev/pts/junk"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(root, "etc/resolv.conf"), []byte("nameserver 10.0.0.1\n"), 0o644))
	var buf bytes.Buffer
	must(TarTree(&buf, root, excluded, emptied))
	hdrs, data, order := tarEntries(t, &buf)
	if !slices.IsSorted(order) {
		t.Errorf("entries not in lexical order: %v", order)
	}
	if h := hdrs["usr/bin/tool"]; h == nil || h.Mode&0o777 != 0o755 || data["usr/bin/tool"] != "#!/bin/sh\n" || h.Uid != os.Getuid() {
		t.Errorf("tool: %+v %q", h, data["usr/bin/tool"])
	}
	if h := hdrs["usr/bin/tool2"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "usr/bin/tool" {
		t.Errorf("hard link: %+v", h)
	}
	if h := hdrs["usr/bin/alias"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "tool" {
		t.Errorf("symlink: %+v", h)
	}
	if h := hdrs["dev/"]; h == nil || h.Typeflag != tar.TypeDir {
		t.Errorf("dev/ directory missing: %v", order)
	}
	if _, ok := hdrs["dev/pts/"]; ok {
		t.Error("dev/pts/ is in the layer")
	}
	if h := hdrs["etc/resolv.conf"]; h == nil || h.Size != 0 || data["etc/resolv.conf"] != "" {
		t.Errorf("etc/resolv.conf carries the build host's contents: %q", data["etc/resolv.conf"])
	}
}

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string][2]string{
		"longhornio/longhorn:v1.2.3": {"docker.io/longhornio/longhorn:v1.2.3", "v1.2.3"},
		"longhornio/longhorn":        {"docker.io/longhornio/longhorn:latest", "latest"},
		"busybox:1":                  {"docker.io/library/busybox:1", "1"},
		"reg.example:5000/lh/lh:dev": {"reg.example:5000/lh/lh:dev", "dev"},
		"localhost/lh:x":             {"localhost/lh:x", "x"},
		"reg.example/lh":             {"reg.example/lh:latest", "latest"},
	} {
		full, tag, err := NormalizeRef(in)
		if err != nil || full != want[0] || tag != want[1] {
			t.Errorf("NormalizeRef(%q) = %q, %q, %v; want %v", in, full, tag, err, want)
		}
	}
	for _, bad := range []string{"", "lh@sha256:00", "lh:", "a b:c", "lh/:x"} {
		if _, _, err := NormalizeRef(bad); err == nil {
			t.Errorf("NormalizeRef(%q) accepted", bad)
		}
	}
}

func TestVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"2.36", "2.4", 1}, {"2.34", "2.36", -1}, {"2.36", "2.36", 0}, {"2.3.4", "2.3", 1}, {"", "2.2.5", -1}} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	status := "Package: libc-bin\nVersion: 2.36-9\n\nPackage: libc6\nStatus: install ok installed\nVersion: 1:2.36-9+deb12u10\n\n"
	if v, err := DpkgVersion(strings.NewReader(status), "libc6"); v != "2.36" || err != nil {
		t.Errorf("DpkgVersion = %q, %v", v, err)
	}
	if v, _ := DpkgVersion(strings.NewReader(status), "zlib1g"); v != "" {
		t.Errorf("missing package: %q", v)
	}
	if v, err := RequiredGlibc("/bin/ls"); err != nil || CompareVersions(v, "2.2") < 0 {
		t.Errorf("RequiredGlibc(/bin/ls) = %q, %v", v, err)
	}
	if err := checkGlibc("/bin/ls", "2.0"); err == nil || !strings.Contains(err.Error(), "IMAGE_CGO=0") {
		t.Errorf("checkGlibc against glibc 2.0: %v", err)
	}
	if err := checkGlibc("/bin/ls", "99.0"); err != nil {
		t.Error(err)
	}
}

// An archive made from a small tree and a fake binary is a valid OCI
// layout whose index names the image for containerd, with the base layer
// first and the binary at /usr/local/bin/longhorn.
func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(filepath.Join(tree, "usr/local/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	base, err := writeLayerFile(filepath.Join(dir, "base.tar.gz"), 6, func(w io.Writer) error { return TarTree(w, tree, nil, nil) })
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "longhorn")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	binL, err := binaryLayer(filepath.Join(dir, "bin.tar.gz"), bin)
	if err != nil {
		t.Fatal(err)
	}
	img, err := assemble(&fileLayer{path: filepath.Join(dir, "base.tar.gz"), info: base}, binL,
		imageConfig(time.Unix(1700000000, 0), map[string]string{"k": "v"}), "debootstrap")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out", "longhorn.oci.tar")
	if err := WriteArchive(out, img, "longhornio/longhorn:v9"); err != nil {
		t.Fatal(err)
	}
	lp := filepath.Join(dir, "layout")
	untar(t, out, lp)
	idx, err := layout.ImageIndexFromPath(lp)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("index: %+v, %v", im, err)
	}
	ann := im.Manifests[0].Annotations
	if ann[annotationImageName] != "docker.io/longhornio/longhorn:v9" || ann[annotationRefName] != "v9" {
		t.Errorf("annotations %v", ann)
	}
	got, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(got); err != nil {
		t.Fatalf("invalid image: %v", err)
	}
	checkImage(t, got)
}

func checkImage(t *testing.T, img v1.Image) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Cmd, []string{"longhorn", "--help"}) || cfg.OS != "linux" || cfg.Config.Labels["k"] != "v" {
		t.Errorf("config %+v", cfg.Config)
	}
	if _, ok := cfg.Config.Volumes["/var/lib/longhorn"]; !ok {
		t.Error("no /var/lib/longhorn volume")
	}
	layers, _ := img.Layers()
	if len(layers) != 2 {
		t.Fatalf("%d layers", len(layers))
	}
	rc, err := layers[1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	hdrs, data, _ := tarEntries(t, rc)
	if h := hdrs[binaryPath]; h == nil || h.Mode != 0o755 || h.Uid != 0 || data[binaryPath] != "binary" {
		t.Errorf("binary layer: %+v", hdrs)
	}
}

// untar extracts the regular files and directories of a tar file.
func untar(t *testing.T, file, dir string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			err = os.MkdirAll(p, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
