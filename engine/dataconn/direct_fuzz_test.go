package dataconn

import (
	"encoding/binary"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func viewAnswer(h Header, payload []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(payload))
	h.DataLen = uint32(len(payload))
	h.Encode(b)
	return append(b, payload...)
}

// FuzzReadViewAnswer feeds arbitrary bytes as a replica's answer to
// ReadView through a real unix socket (without descriptors, so no answer
// may be accepted) and checks decodeView's verdicts against its rules.
func FuzzReadViewAnswer(f *testing.F) {
	good := make([]byte, viewPayload)
	binary.LittleEndian.PutUint64(good, 4)
	binary.LittleEndian.PutUint64(good[8:], 256)
	binary.LittleEndian.PutUint32(good[16:], 2)
	f.Add(viewAnswer(Header{Type: TypeResponse}, good), 4)
	f.Add(viewAnswer(Header{Type: TypeError}, []byte("no view")), 0)
	f.Add(viewAnswer(Header{Type: TypeResponse}, good[:10]), 2)
	f.Add([]byte{0x01, 0x1b, 0, 0}, 0)
	f.Fuzz(func(t *testing.T, data []byte, nfds int) {
		if len(data) > 1<<16 {
			return
		}
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Skip(err)
		}
		w := os.NewFile(uintptr(pair[0]), "w")
		rf := os.NewFile(uintptr(pair[1]), "r")
		nc, err := net.FileConn(rf)
		rf.Close()
		if err != nil {
			w.Close()
			t.Skip(err)
		}
		uc := nc.(*net.UnixConn)
		defer uc.Close()
		go func() {
			_, _ = w.Write(data)
			w.Close()
		}()
		msg := make([]byte, HeaderSize+viewPayload)
		oob := make([]byte, unix.CmsgSpace(4*(MaxViewLayers+2)))
		n, oobn, _, _, rerr := uc.ReadMsgUnix(msg, oob)
		n, oobn = max(n, 0), max(oobn, 0)
		fds := parseRights(oob[:oobn])
		if v, err := mapView(uc, msg, n, fds, rerr); err == nil {
			v.release()
			t.Fatal("an answer without descriptors was accepted")
		}
		if len(data) >= HeaderSize {
			h, err := DecodeHeader(data)
			if err != nil {
				return
			}
			payload := data[HeaderSize:]
			info, err := decodeView(h, payload, nfds)
			if err == nil && (info.seq%2 != 0 || info.layers < 1 || info.layers > MaxViewLayers ||
				nfds != info.layers+2 || info.sectors <= 0 || info.sectors > maxViewSectors) {
				t.Fatalf("decodeView accepted %+v with %d descriptors", info, nfds)
			}
		}
	})
}
