package framework

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// ErrMismatch is wrapped when data read back differs from what was written.
var ErrMismatch = errors.New("data mismatch")

// MaxDataSetSize bounds a DataSet (it is generated in memory): 1 GiB.
const MaxDataSetSize = 1 << 30

// DataSet is a known, reproducible data set: Size bytes of ChaCha8
// pseudo-random data from Seed, written at byte Offset of a volume.
type DataSet struct {
	Seed         uint64
	Offset, Size int64
}

// Validate checks the range: offset >= 0, 0 < size <= MaxDataSetSize, both
// multiples of 512 (the iSCSI block size and qemu's request alignment).
func (d DataSet) Validate() error {
	switch {
	case d.Offset < 0 || d.Offset%512 != 0:
		return fmt.Errorf("data set offset %d: want a multiple of 512 >= 0", d.Offset)
	case d.Size <= 0 || d.Size > MaxDataSetSize || d.Size%512 != 0:
		return fmt.Errorf("data set size %d: want a multiple of 512 in (0, %d]", d.Size, MaxDataSetSize)
	}
	return nil
}

// Bytes generates the data set's content.
func (d DataSet) Bytes() []byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], d.Seed)
	b := make([]byte, d.Size)
	_, _ = rand.NewChaCha8(seed).Read(b)
	return b
}

// SHA256 is the hex SHA-256 of Bytes.
func (d DataSet) SHA256() string {
	s := sha256.Sum256(d.Bytes())
	return hex.EncodeToString(s[:])
}

// WriteData writes the data set through the endpoint with qemu-img convert
// (qemu's nbd or iscsi driver) inside the engine's node, via a temporary
// file there, and flushes it.
func (c *Cluster) WriteData(ctx context.Context, ep Endpoint, d DataSet) error {
	if err := d.Validate(); err != nil {
		return err
	}
	opts, err := QemuImageOpts(ep.URI, d.Offset, d.Size)
	if err != nil {
		return err
	}
	script := `set -e; f=$(mktemp /tmp/lhfw-data.XXXXXX); trap 'rm -f "$f"' EXIT; cat > "$f"; ` +
		`qemu-img convert -n -f raw "$f" --target-image-opts "$1"`
	if _, err := c.NodeExec(ctx, ep.Node, bytes.NewReader(d.Bytes()), "sh", "-c", script, "sh", opts); err != nil {
		return fmt.Errorf("write %d bytes at %d to %s: %w", d.Size, d.Offset, ep.Volume, err)
	}
	return nil
}

// ReadSHA256 reads [offset, offset+size) through the endpoint with
// qemu-img convert inside the engine's node and returns its hex SHA-256.
func (c *Cluster) ReadSHA256(ctx context.Context, ep Endpoint, offset, size int64) (string, error) {
	opts, err := QemuImageOpts(ep.URI, offset, size)
	if err != nil {
		return "", err
	}
	script := `set -e; f=$(mktemp /tmp/lhfw-data.XXXXXX); trap 'rm -f "$f"' EXIT; ` +
		`qemu-img convert -O raw --image-opts "$1" "$f"; sha256sum "$f"`
	out, err := c.NodeExec(ctx, ep.Node, nil, "sh", "-c", script, "sh", opts)
	if err != nil {
		return "", fmt.Errorf("read %d bytes at %d of %s: %w", size, offset, ep.Volume, err)
	}
	return parseSHA256Sum(out)
}

// VerifyData reads the data set's range back and compares checksums; a
// difference wraps ErrMismatch.
func (c *Cluster) VerifyData(ctx context.Context, ep Endpoint, d DataSet) error {
	if err := d.Validate(); err != nil {
		return err
	}
	got, err := c.ReadSHA256(ctx, ep, d.Offset, d.Size)
	if err != nil {
		return err
	}
	if want := d.SHA256(); got != want {
		return fmt.Errorf("%w: %s [%d, +%d): sha256 %s, want %s", ErrMismatch, ep.Volume, d.Offset, d.Size, got, want)
	}
	return nil
}

// parseSHA256Sum takes the hash from sha256sum(1) output "HEX  FILE".
func parseSHA256Sum(out []byte) (string, error) {
	f := strings.Fields(string(out))
	if len(f) == 0 || len(f[0]) != 64 {
		return "", fmt.Errorf("sha256sum output %q: want a 64-digit hash", out)
	}
	if _, err := hex.DecodeString(f[0]); err != nil {
		return "", fmt.Errorf("sha256sum output %q: %w", out, err)
	}
	return f[0], nil
}

// WritePattern fills [offset, offset+length) with byte b through the
// endpoint with qemu-io inside the engine's node.
func (c *Cluster) WritePattern(ctx context.Context, ep Endpoint, offset, length int64, b byte) error {
	return c.qemuIO(ctx, ep, fmt.Sprintf("write -P 0x%02x %d %d", b, offset, length))
}

// VerifyPattern reads [offset, offset+length) with qemu-io's pattern check
// (read -P) inside the engine's node; a mismatch fails the command.
func (c *Cluster) VerifyPattern(ctx context.Context, ep Endpoint, offset, length int64, b byte) error {
	err := c.qemuIO(ctx, ep, fmt.Sprintf("read -P 0x%02x %d %d", b, offset, length))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMismatch, err)
	}
	return nil
}

func (c *Cluster) qemuIO(ctx context.Context, ep Endpoint, cmd string) error {
	if _, err := ParseEndpoint(ep.URI); err != nil {
		return err
	}
	_, err := c.NodeExec(ctx, ep.Node, nil, "qemu-io", "-f", "raw", "-c", cmd, ep.URI)
	return err
}
