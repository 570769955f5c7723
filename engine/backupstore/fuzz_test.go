package backupstore

import (
	"bytes"
	"encoding/json"
	"net/url"
	"testing"
)

// Files read from a backup target are network input: decoding them never
// panics, and a decoded backup's block list is validated.
func FuzzDecodeConfigs(f *testing.F) {
	f.Add([]byte(docBackupCfg))
	f.Add([]byte(docVolumeCfg))
	f.Add([]byte(`{"Name":"lock-0123456789abcdef","Type":2,"Acquired":true}`))
	f.Add([]byte(`{"Blocks":[{"Offset":-1,"BlockChecksum":"zz"}],"Parameters":{"backup-block-size":"9999999999999Gi"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b Backup
		if json.Unmarshal(data, &b) == nil {
			_ = checkBlocks(&b)
			_, _ = b.BlockSize()
		}
		var v Volume
		_ = json.Unmarshal(data, &v)
		var l lockFile
		_ = json.Unmarshal(data, &l)
	})
}

// Block files are network input too: any bytes either decode to a block
// whose checksum matches or fail with an error.
func FuzzDecompressBlock(f *testing.F) {
	var z bytes.Buffer
	block := bytes.Repeat([]byte{7}, 4096)
	for _, m := range []string{CompressionLZ4, CompressionGzip, CompressionNone} {
		if err := compress(m, block, &z); err != nil {
			f.Fatal(err)
		}
		f.Add(m, bytes.Clone(z.Bytes()))
	}
	sum := Checksum(block)
	f.Fuzz(func(t *testing.T, method string, raw []byte) {
		dst := make([]byte, len(block))
		n, err := decompress(method, raw, dst, sum)
		if err == nil && (n != len(block) || Checksum(dst[:n]) != sum) {
			t.Fatalf("decoded %d bytes that do not match the checksum", n)
		}
	})
}

// Target URLs come from users: parsing never panics.
func FuzzTargetURL(f *testing.F) {
	for _, s := range []string{"s3://bucket@us-east-1/path/", "nfs://srv:/exp?nfsOptions=port=2049,mountport=20048",
		"vfs:///tmp/x", "s3://", "nfs://:/", "%", "s3://b@r/p?backup=backup-1&volume=v1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		_, _, _, _ = parseS3URL(u)
		if nt, err := parseNFSURL(u); err == nil {
			_, _ = nt.option("port")
			_ = nt.mountArgs(nt.mountPoint())
		}
		_, _, _, _ = DecodeBackupURL(s)
		_, _ = BlockSizeFromParameters(map[string]string{ParameterBackupBlockSize: s})
	})
}
