package backupstore

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pierrec/lz4/v4"
)

// Compression methods of block files (Longhorn's backup-compression-method).
const (
	CompressionNone = "none"
	CompressionLZ4  = "lz4"  // the default since Longhorn 1.5
	CompressionGzip = "gzip" // the legacy default: volumes whose volume.cfg names no method
)

// Backup parameters (Longhorn's go-common-libs backup package).
const (
	ParameterBackupMode      = "backup-mode"       // "full" | "incremental"
	ParameterBackupBlockSize = "backup-block-size" // a quantity: "2097152", "2Mi", "16Mi"
	BackupModeFull           = "full"
	BackupModeIncremental    = "incremental"
)

// Block sizes.
const (
	DefaultBlockSize = 2 << 20
	LargeBlockSize   = 16 << 20
)

// ValidateCompression checks a compression method name.
func ValidateCompression(method string) error {
	switch method {
	case CompressionNone, CompressionLZ4, CompressionGzip:
		return nil
	}
	return fmt.Errorf("%w: compression method %q: want none, lz4 or gzip", ErrInvalid, method)
}

// compress returns data compressed with method, appended to dst[:0].
func compress(method string, data []byte, dst *bytes.Buffer) error {
	dst.Reset()
	var w io.WriteCloser
	switch method {
	case CompressionNone:
		dst.Write(data)
		return nil
	case CompressionLZ4:
		w = lz4.NewWriter(dst)
	case CompressionGzip:
		w = gzip.NewWriter(dst)
	default:
		return ValidateCompression(method)
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Close()
}

// decompress decodes a block file with method into dst (which must be the
// block size) and verifies it against checksum, with a one-use decoder.
func decompress(method string, raw []byte, dst []byte, checksum string) (int, error) {
	var d decoder
	return d.decompress(method, raw, dst, checksum)
}

// decoder decodes block files, reusing its lz4 and gzip readers (and
// their buffers) from one block to the next: a restore worker owns one.
type decoder struct {
	lz4 *lz4.Reader
	gz  *gzip.Reader
	src bytes.Reader
}

// decompress decodes a block file with method into dst (which must be the
// block size) and verifies it against checksum. A block that fails to
// decode as lz4 is retried as gzip and the other way round, as Longhorn does
// (blocks written before a compression change). It returns the number of
// bytes decoded; a block shorter than dst leaves the rest unchanged.
func (d *decoder) decompress(method string, raw []byte, dst []byte, checksum string) (int, error) {
	n, err := d.decodeInto(method, raw, dst)
	if err != nil && method != CompressionNone {
		alt := CompressionGzip
		if method == CompressionGzip {
			alt = CompressionLZ4
		}
		if n2, err2 := d.decodeInto(alt, raw, dst); err2 == nil {
			n, err = n2, nil
		}
	}
	if err != nil {
		return 0, fmt.Errorf("%w: block %s: %s decode: %v", ErrCorrupt, checksum, method, err)
	}
	if got := Checksum(dst[:n]); got != checksum {
		return 0, fmt.Errorf("%w: block %s: content checksum is %s", ErrCorrupt, checksum, got)
	}
	return n, nil
}

func (d *decoder) decodeInto(method string, raw, dst []byte) (int, error) {
	var r io.Reader
	d.src.Reset(raw)
	switch method {
	case CompressionNone:
		if len(raw) > len(dst) {
			return 0, fmt.Errorf("%d bytes, more than the block size %d", len(raw), len(dst))
		}
		return copy(dst, raw), nil
	case CompressionLZ4:
		if d.lz4 == nil {
			d.lz4 = lz4.NewReader(&d.src)
		} else {
			d.lz4.Reset(&d.src)
		}
		r = d.lz4
	case CompressionGzip:
		var err error
		if d.gz == nil {
			d.gz, err = gzip.NewReader(&d.src)
		} else {
			err = d.gz.Reset(&d.src)
		}
		if err != nil {
			return 0, err
		}
		r = d.gz
	default:
		return 0, ValidateCompression(method)
	}
	n, err := io.ReadFull(r, dst)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil {
		return 0, err
	}
	if n == len(dst) { // the stream must end here
		var one [1]byte
		if m, _ := r.Read(one[:]); m > 0 {
			return 0, fmt.Errorf("decodes to more than the block size %d", len(dst))
		}
	}
	return n, nil
}

// BlockSizeFromParameters returns the block size a backup's parameters ask
// for (ParameterBackupBlockSize, a Kubernetes quantity); DefaultBlockSize
// when absent, empty or zero. Only 2 MiB and 16 MiB are accepted.
func BlockSizeFromParameters(params map[string]string) (int64, error) {
	v := strings.TrimSpace(params[ParameterBackupBlockSize])
	if v == "" {
		return DefaultBlockSize, nil
	}
	n, err := parseQuantity(v)
	if err != nil {
		return 0, fmt.Errorf("%w: parameter %s=%q: %v", ErrInvalid, ParameterBackupBlockSize, v, err)
	}
	switch n {
	case 0:
		return DefaultBlockSize, nil
	case DefaultBlockSize, LargeBlockSize:
		return n, nil
	}
	return 0, fmt.Errorf("%w: parameter %s=%q: want 2Mi (2097152) or 16Mi (16777216)", ErrInvalid, ParameterBackupBlockSize, v)
}

// parseQuantity parses a non-negative integer with an optional binary
// (Ki Mi Gi) or decimal (k M G) suffix, the subset of Kubernetes quantities
// that block sizes use.
func parseQuantity(s string) (int64, error) {
	mult := int64(1)
	for _, sfx := range []struct {
		s string
		m int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}} {
		if strings.HasSuffix(s, sfx.s) {
			s, mult = strings.TrimSuffix(s, sfx.s), sfx.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("not a size")
	}
	return n * mult, nil
}

// isFullMode reports whether the parameters ask for a full backup.
func isFullMode(params map[string]string) bool { return params[ParameterBackupMode] == BackupModeFull }

// ValidateParameters checks the parameters a backup accepts.
func ValidateParameters(params map[string]string) error {
	if m, ok := params[ParameterBackupMode]; ok && m != BackupModeFull && m != BackupModeIncremental && m != "" {
		return fmt.Errorf("%w: parameter %s=%q: want full or incremental", ErrInvalid, ParameterBackupMode, m)
	}
	_, err := BlockSizeFromParameters(params)
	return err
}
