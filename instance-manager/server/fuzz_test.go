package server

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
)

// FuzzValidateEngineAddress: the proxy's address check never panics and
// accepts only HOST:PORT with a valid port.
func FuzzValidateEngineAddress(f *testing.F) {
	for _, s := range []string{"127.0.0.1:10000", "[::1]:1", "host:0", ":80", "a:b", "", "1.2.3.4:65536", "x:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		_ = validateEngineAddress(addr)
	})
}

// FuzzRedact: redaction of arbitrary wire bytes decoded as a backup request
// never panics and never leaves a credential value in the text.
func FuzzRedact(f *testing.F) {
	seed, _ := proto.Marshal(&imrpc.EngineSnapshotBackupRequest{Target: &imrpc.BackupTarget{Url: "s3://x", Credential: map[string]string{"k": "SECRETVALUE"}}})
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m imrpc.EngineSnapshotBackupRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			return
		}
		text := redactedText(&m)
		for _, v := range m.GetTarget().GetCredential() {
			if len(v) >= 8 && v != "REDACTED" && strings.Contains(text, v) {
				t.Fatalf("credential value %q in %s", v, text)
			}
		}
	})
}
