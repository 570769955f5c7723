package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the manifest descriptor in index.json. containerd's
// importer (`ctr images import`) names the image after
// io.containerd.image.name; org.opencontainers.image.ref.name carries the
// tag (OCI image-spec, annotations.md), which `ctr images import
// --base-name NAME` appends to NAME.
const (
	annotationImageName = "io.containerd.image.name"
	annotationRefName   = "org.opencontainers.image.ref.name"
)

// binaryPath is where the longhorn binary lives in the image (on PATH; the
// manifests run "longhorn ...").
const binaryPath = "usr/local/bin/longhorn"

// imageConfig is the runtime configuration of the product image, the same
// as package/Dockerfile's: PATH, CMD ["longhorn", "--help"], the data
// volume and Longhorn's manager ports.
func imageConfig(created time.Time, labels map[string]string) *v1.ConfigFile {
	return &v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Created:      v1.Time{Time: created},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Env:     []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			Cmd:     []string{"longhorn", "--help"},
			Volumes: map[string]struct{}{"/var/lib/longhorn": {}},
			ExposedPorts: map[string]struct{}{
				"9500/tcp": {}, "9501/tcp": {}, "9502/tcp": {}, "9503/tcp": {},
			},
			Labels: labels,
		},
	}
}

// binaryLayer writes a one-file layer holding bin as /usr/local/bin/longhorn
// (root-owned, 0755) to path.
func binaryLayer(path, bin string, extra ...string) (*fileLayer, error) {
	files := map[string]string{binaryPath: bin}
	names := []string{binaryPath}
	for _, e := range extra {
		name := "usr/local/bin/" + filepath.Base(e)
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("-extra-bin %s: a second /%s", e, name)
		}
		files[name] = e
		names = append(names, name)
	}
	info, err := writeLayerFile(path, gzip.BestSpeed, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		for _, name := range names {
			if err := tarExecutable(tw, name, files[name]); err != nil {
				return err
			}
		}
		return tw.Close()
	})
	if err != nil {
		return nil, err
	}
	return &fileLayer{path: path, info: info}, nil
}

// tarExecutable writes the file at src as the executable name (mode 0755).
func tarExecutable(tw *tar.Writer, name, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: fi.Size(),
		ModTime: fi.ModTime().Truncate(time.Second), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if n, err := io.Copy(tw, f); err != nil || n != fi.Size() {
		return fmt.Errorf("copy %s: %d of %d bytes: %v", src, n, fi.Size(), err)
	}
	return nil
}

// assemble builds the OCI image: base layer, then the binary layer, with
// cfg as its configuration.
func assemble(base, bin v1.Layer, cfg *v1.ConfigFile, baseHistory string) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: cfg.Created, CreatedBy: baseHistory}},
		mutate.Addendum{Layer: bin, MediaType: types.OCILayer, History: v1.History{Created: cfg.Created, CreatedBy: "COPY longhorn /" + binaryPath}},
	)
}

// NormalizeRef returns the fully qualified name containerd and the kubelet
// use for ref (Docker's rules): a first component without "." or ":" that
// is not "localhost" means docker.io; a one-component name on docker.io is
// under library/; no tag means ":latest". Digest references are refused.
func NormalizeRef(ref string) (full, tag string, err error) {
	if ref == "" || strings.Contains(ref, "@") || strings.ContainsAny(ref, " \t") {
		return "", "", fmt.Errorf("image reference %q: want [registry/]name[:tag]", ref)
	}
	name, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	if name == "" || tag == "" || strings.HasSuffix(name, "/") {
		return "", "", fmt.Errorf("image reference %q: want [registry/]name[:tag]", ref)
	}
	first, _, hasSlash := strings.Cut(name, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !hasSlash {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	return name + ":" + tag, tag, nil
}

// WriteArchive writes img as an OCI archive (a tar of an OCI image layout:
// oci-layout, index.json, blobs/sha256/...) to path, through a temporary
// file, with index.json naming it ref (see NormalizeRef).
func WriteArchive(path string, img v1.Image, ref string) error {
	full, tag, err := NormalizeRef(ref)
	if err != nil {
		return err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2, MediaType: types.OCIImageIndex,
		Manifests: []v1.Descriptor{{MediaType: mt, Digest: digest, Size: int64(len(manifest)),
			Annotations: map[string]string{annotationImageName: full, annotationRefName: tag}}},
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := writeLayout(f, img, manifest, digest, index); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeLayout streams the layout's files into a tar.
func writeLayout(w io.Writer, img v1.Image, manifest []byte, digest v1.Hash, index []byte) error {
	tw := tar.NewWriter(w)
	now := time.Now().Truncate(time.Second)
	add := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: now}); err != nil {
			return err
		}
		n, err := io.Copy(tw, r)
		if err == nil && n != size {
			err = fmt.Errorf("%s: wrote %d of %d bytes", name, n, size)
		}
		return err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	layout := []byte(`{"imageLayoutVersion":"1.0.0"}`)
	if err := add("oci-layout", int64(len(layout)), bytes.NewReader(layout)); err != nil {
		return err
	}
	if err := add("index.json", int64(len(index)), bytes.NewReader(index)); err != nil {
		return err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: now}); err != nil {
			return err
		}
	}
	if err := add(blob(digest), int64(len(manifest)), bytes.NewReader(manifest)); err != nil {
		return err
	}
	if err := add(blob(cfgName), int64(len(cfg)), bytes.NewReader(cfg)); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		if err := addLayer(add, blob, l); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addLayer(add func(string, int64, io.Reader) error, blob func(v1.Hash) string, l v1.Layer) error {
	d, err := l.Digest()
	if err != nil {
		return err
	}
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	return add(blob(d), size, rc)
}
