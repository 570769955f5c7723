package cluster

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// OCI image-spec v1.1 media types and annotations used by the archives the
// local cluster writes and reads (image-spec: image-layout.md, manifest.md,
// config.md, annotations.md; containerd's io.containerd.image.name).
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
	annotationRefName = "org.opencontainers.image.ref.name"
	annotationCtrName = "io.containerd.image.name"
)

// ErrImageArchive is wrapped by errors about an image archive's content.
var ErrImageArchive = errors.New("bad image archive")

// ImageFile is one entry of an image's single layer: a directory (Dir), a
// file copied from the host (Source) or a file with the given Data.
type ImageFile struct {
	// Path is the absolute path in the image.
	Path string
	// Mode is the permission bits (0o755 for programs).
	Mode fs.FileMode
	// Dir makes a directory; else Source or Data gives the content.
	Dir    bool
	Source string
	Data   []byte
}

// ImageSpec is what WriteOCIArchive puts into an image.
type ImageSpec struct {
	// Ref is the image reference, e.g. "longhornio/longhorn:v1"; the
	// archive names it in its normalized form (NormalizeRef).
	Ref string
	// Files make up the one layer, written in path order.
	Files []ImageFile
	// Entrypoint, Cmd and Env are the image config's defaults.
	Entrypoint, Cmd, Env []string
}

// NormalizeRef returns ref as containerd's CRI names images: a reference
// without a registry gets "docker.io/", a one-word repository also
// "library/", and a reference without tag or digest ":latest".
func NormalizeRef(ref string) string {
	name, tag := ref, ""
	if i := strings.IndexAny(ref, "@"); i >= 0 {
		name, tag = ref[:i], ref[i:]
	} else if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i:]
	}
	if tag == "" {
		tag = ":latest"
	}
	first, _, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		name = "docker.io/library/" + name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	return name + tag
}

// WriteOCIArchive writes an OCI image-layout tar archive (oci-layout,
// index.json, blobs/sha256/...) holding one image for linux/GOARCH with one
// uncompressed layer, as `ctr images import` reads it. The index names the
// image with both annotationCtrName and annotationRefName (normalized ref).
// The file is written to a temporary name and renamed, so a reader never
// sees half an archive.
func WriteOCIArchive(dst string, spec ImageSpec) error {
	layer, err := layerTar(spec.Files)
	if err != nil {
		return err
	}
	created := time.Unix(0, 0).UTC().Format(time.RFC3339)
	cfg, err := json.Marshal(map[string]any{
		"created": created, "architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": spec.Entrypoint, "Cmd": spec.Cmd, "Env": spec.Env},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digestOf(layer)}},
	})
	if err != nil {
		return err
	}
	man, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": mediaTypeManifest,
		"config": descriptor(mediaTypeConfig, cfg, nil),
		"layers": []any{descriptor(mediaTypeLayer, layer, nil)},
	})
	if err != nil {
		return err
	}
	name := NormalizeRef(spec.Ref)
	idx, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": mediaTypeIndex,
		"manifests": []any{descriptor(mediaTypeManifest, man, map[string]string{annotationCtrName: name, annotationRefName: name})},
	})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, e := range []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", idx},
		{blobPath(cfg), cfg}, {blobPath(man), man}, {blobPath(layer), layer},
	} {
		if err := tarFile(tw, e.name, 0o644, e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, out.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func blobPath(b []byte) string { return "blobs/sha256/" + strings.TrimPrefix(digestOf(b), "sha256:") }

func descriptor(mt string, b []byte, ann map[string]string) map[string]any {
	d := map[string]any{"mediaType": mt, "digest": digestOf(b), "size": len(b)}
	if ann != nil {
		d["annotations"] = ann
	}
	return d
}

// layerTar renders files (and their parent directories) as a tar stream
// with fixed owners and times, so the same files give the same digest.
func layerTar(files []ImageFile) ([]byte, error) {
	sorted := append([]ImageFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	var mkdirs func(p string) error
	mkdirs = func(p string) error {
		if p == "/" || p == "." || dirs[p] {
			return nil
		}
		if err := mkdirs(path.Dir(p)); err != nil {
			return err
		}
		dirs[p] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: 0o755, ModTime: time.Unix(0, 0)})
	}
	for _, f := range sorted {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("%w: path %q: want a clean absolute path", ErrImageArchive, f.Path)
		}
		if f.Dir {
			if err := mkdirs(f.Path); err != nil {
				return nil, err
			}
			continue
		}
		if err := mkdirs(path.Dir(f.Path)); err != nil {
			return nil, err
		}
		data := f.Data
		if f.Source != "" {
			b, err := os.ReadFile(f.Source)
			if err != nil {
				return nil, fmt.Errorf("image file %s: %w", f.Path, err)
			}
			data = b
		}
		if err := tarFile(tw, strings.TrimPrefix(f.Path, "/"), int64(f.Mode.Perm()), data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func tarFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// ArchiveImage is the image an OCI archive's index names.
type ArchiveImage struct {
	// Ref is the name as the archive gives it (annotationCtrName, else
	// annotationRefName).
	Ref string
	// Digest is the manifest (or nested index) digest.
	Digest string
}

// ReadArchiveImages lists the named images of an OCI image-layout archive
// (its index.json). An archive whose index names no image with a
// repository (only bare tags) is an error wrapping ErrImageArchive:
// the cluster must know under which name pods will ask for it.
func ReadArchiveImages(archive string) ([]ArchiveImage, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s has no index.json (not an OCI image layout)", ErrImageArchive, archive)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrImageArchive, archive, err)
		}
		if path.Clean(strings.TrimPrefix(h.Name, "./")) != "index.json" {
			continue
		}
		return parseIndex(archive, io.LimitReader(tr, 1<<20))
	}
}

func parseIndex(archive string, r io.Reader) ([]ArchiveImage, error) {
	var idx struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.NewDecoder(r).Decode(&idx); err != nil {
		return nil, fmt.Errorf("%w: %s: index.json: %v", ErrImageArchive, archive, err)
	}
	var out []ArchiveImage
	for _, m := range idx.Manifests {
		ref := m.Annotations[annotationCtrName]
		if ref == "" {
			ref = m.Annotations[annotationRefName]
		}
		// A bare tag ("v1", "latest") names no repository.
		if strings.ContainsAny(ref, "/:") && !strings.HasPrefix(ref, ":") {
			out = append(out, ArchiveImage{Ref: ref, Digest: m.Digest})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: index.json names no image with a repository (annotation %s or %s)", ErrImageArchive, archive, annotationCtrName, annotationRefName)
	}
	return out, nil
}
