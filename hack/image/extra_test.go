package main

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// TestBinaryLayerExtraBins: -extra-bin files (the CSI sidecars) land beside
// longhorn in /usr/local/bin, executable; two of one name are refused.
func TestBinaryLayerExtraBins(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bin, sc := write("longhorn", "binary"), write("csi-provisioner", "sidecar")
	l, err := binaryLayer(filepath.Join(dir, "layer.tar.gz"), bin, sc)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	hdrs, data, _ := tarEntries(t, zr)
	if h := hdrs["usr/local/bin/csi-provisioner"]; h == nil || h.Mode != 0o755 || data["usr/local/bin/csi-provisioner"] != "sidecar" {
		t.Errorf("extra binary: %+v", hdrs)
	}
	if data[binaryPath] != "binary" {
		t.Errorf("longhorn binary: %q", data[binaryPath])
	}
	if _, err := binaryLayer(filepath.Join(dir, "l2.tar.gz"), bin, sc, sc); err == nil {
		t.Error("two extra binaries of one name accepted")
	}
}
