package blockdev

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/frontend/nbd"
)

// The kernel NBD client's generic netlink interface (linux/nbd-netlink.h).
const (
	nbdGenlFamily     = "nbd"
	nbdCmdConnect     = 1
	nbdCmdDisconnect  = 2
	nbdAttrIndex      = 1
	nbdAttrSizeBytes  = 2
	nbdAttrBlockSize  = 3
	nbdAttrTimeout    = 4
	nbdAttrServerFlag = 5
	nbdAttrClientFlag = 6
	nbdAttrSockets    = 7
	nbdSockItem       = 1
	nbdSockFD         = 1
	// nbdCflagDestroyOnDisconnect frees the device when it disconnects.
	nbdCflagDestroyOnDisconnect = 1
	// nbdMajor is the block major of /dev/nbdN.
	nbdMajor = 43
)

// NBD handshake values (github.com/NetworkBlockDevice/nbd doc/proto.md).
const (
	nbdMagic          = 0x4e42444d41474943 // "NBDMAGIC"
	nbdOptMagic       = 0x49484156454F5054 // "IHAVEOPT"
	nbdRepMagic       = 0x3e889045565a9
	nbdFlagFixed      = 1 << 0
	nbdFlagNoZeroes   = 1 << 1
	nbdOptGo          = 7
	nbdRepAck         = 1
	nbdRepInfo        = 3
	nbdInfoExport     = 0
	nbdRepErrBit      = 1 << 31
	nbdFlagMultiConn  = 1 << 8
	nbdKernelConns    = 4
	nbdRequestTimeout = 60 // seconds, as Longhorn's SCSI timeout
)

// nbdDevice is the nbd mode: /dev/nbdN connected to the engine's NBD server.
type nbdDevice struct {
	server *nbd.Server
	index  int
	path   string
	dev    uint64
}

func attachNBD(ctx context.Context, cfg Config, name string, size int64, be frontend.Backend) (device, error) {
	sock := filepath.Join(cfg.NBDSocketDir, name+".sock")
	srv, err := nbd.New(nbd.Config{Listen: "unix:" + sock})
	if err != nil {
		return nil, err
	}
	if err := srv.Startup(ctx, name, size, be); err != nil {
		return nil, err
	}
	conns, flags, err := nbdNegotiateConns(ctx, sock, name)
	if err != nil {
		return nil, errors.Join(err, srv.Shutdown())
	}
	defer closeAll(conns) // the kernel holds its own references
	fds := make([]uint32, len(conns))
	for i, c := range conns {
		fds[i] = uint32(c.Fd())
	}
	index, err := nbdConnect(size, flags, fds)
	if err != nil {
		return nil, errors.Join(err, srv.Shutdown())
	}
	path := fmt.Sprintf("/dev/nbd%d", index)
	return &nbdDevice{server: srv, index: index, path: path, dev: unix.Mkdev(nbdMajor, uint32(index))}, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// nbdNegotiateConns opens connections to the local NBD server and takes
// each through the handshake to the transmission phase: one, or
// nbdKernelConns when the export allows multiple connections.
func nbdNegotiateConns(ctx context.Context, sock, name string) ([]*os.File, uint16, error) {
	var out []*os.File
	var flags uint16
	for i := 0; i < nbdKernelConns; i++ {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", sock)
		if err != nil {
			closeAll(out)
			return nil, 0, fmt.Errorf("nbd: dial %s: %w", sock, err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, fl, err := nbdClientHandshake(c, name)
		if err != nil {
			c.Close()
			closeAll(out)
			return nil, 0, err
		}
		f, err := c.(*net.UnixConn).File()
		c.Close()
		if err != nil {
			closeAll(out)
			return nil, 0, err
		}
		out, flags = append(out, f), fl
		if fl&nbdFlagMultiConn == 0 {
			break
		}
	}
	return out, flags, nil
}

// nbdClientHandshake runs the fixed newstyle handshake with NBD_OPT_GO for
// export name and returns the export's size and transmission flags.
func nbdClientHandshake(rw io.ReadWriter, name string) (uint64, uint16, error) {
	var hello struct {
		Magic, OptMagic uint64
		Flags           uint16
	}
	if err := binary.Read(rw, binary.BigEndian, &hello); err != nil {
		return 0, 0, fmt.Errorf("nbd handshake: %w", err)
	}
	if hello.Magic != nbdMagic || hello.OptMagic != nbdOptMagic || hello.Flags&nbdFlagFixed == 0 {
		return 0, 0, errors.New("nbd handshake: server is not fixed newstyle")
	}
	opt := binary.BigEndian.AppendUint32(nil, nbdFlagFixed|uint32(hello.Flags&nbdFlagNoZeroes))
	opt = binary.BigEndian.AppendUint64(opt, nbdOptMagic)
	opt = binary.BigEndian.AppendUint32(opt, nbdOptGo)
	opt = binary.BigEndian.AppendUint32(opt, uint32(4+len(name)+2))
	opt = binary.BigEndian.AppendUint32(opt, uint32(len(name)))
	opt = append(opt, name...)
	opt = binary.BigEndian.AppendUint16(opt, 0)
	if _, err := rw.Write(opt); err != nil {
		return 0, 0, fmt.Errorf("nbd handshake: %w", err)
	}
	return nbdReadGoReplies(rw)
}

func nbdReadGoReplies(r io.Reader) (uint64, uint16, error) {
	var size uint64
	var flags uint16
	for {
		var rep struct {
			Magic     uint64
			Opt, Type uint32
			Len       uint32
		}
		if err := binary.Read(r, binary.BigEndian, &rep); err != nil {
			return 0, 0, fmt.Errorf("nbd handshake: %w", err)
		}
		if rep.Magic != nbdRepMagic || rep.Len > 1<<16 {
			return 0, 0, fmt.Errorf("nbd handshake: bad option reply (magic %#x, length %d)", rep.Magic, rep.Len)
		}
		data := make([]byte, rep.Len)
		if _, err := io.ReadFull(r, data); err != nil {
			return 0, 0, fmt.Errorf("nbd handshake: %w", err)
		}
		switch {
		case rep.Type&nbdRepErrBit != 0:
			return 0, 0, fmt.Errorf("nbd handshake: NBD_OPT_GO refused (%#x): %s", rep.Type, data)
		case rep.Type == nbdRepInfo && len(data) >= 12 && binary.BigEndian.Uint16(data) == nbdInfoExport:
			size, flags = binary.BigEndian.Uint64(data[2:]), binary.BigEndian.Uint16(data[10:])
		case rep.Type == nbdRepAck:
			return size, flags, nil
		}
	}
}

// nbdConnectAttrs encodes NBD_CMD_CONNECT's attributes.
func nbdConnectAttrs(size int64, flags uint16, fds []uint32) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint64(nbdAttrSizeBytes, uint64(size))
	ae.Uint64(nbdAttrBlockSize, 512)
	ae.Uint64(nbdAttrTimeout, nbdRequestTimeout)
	ae.Uint64(nbdAttrServerFlag, uint64(flags))
	ae.Uint64(nbdAttrClientFlag, nbdCflagDestroyOnDisconnect)
	ae.Nested(nbdAttrSockets, func(nae *netlink.AttributeEncoder) error {
		for _, fd := range fds {
			nae.Nested(nbdSockItem, func(iae *netlink.AttributeEncoder) error {
				iae.Uint32(nbdSockFD, fd)
				return nil
			})
		}
		return nil
	})
	return ae.Encode()
}

// nbdConnect sends NBD_CMD_CONNECT and returns the device index the kernel chose.
func nbdConnect(size int64, flags uint16, fds []uint32) (int, error) {
	attrs, err := nbdConnectAttrs(size, flags, fds)
	if err != nil {
		return 0, err
	}
	msgs, err := nbdGenl(nbdCmdConnect, attrs)
	if err != nil {
		return 0, fmt.Errorf("nbd: NBD_CMD_CONNECT: %w", err)
	}
	for _, m := range msgs {
		ad, err := netlink.NewAttributeDecoder(m.Data)
		if err != nil {
			return 0, err
		}
		for ad.Next() {
			if ad.Type() == nbdAttrIndex {
				return int(ad.Uint32()), nil
			}
		}
	}
	return 0, errors.New("nbd: NBD_CMD_CONNECT answered no device index")
}

// nbdDisconnect sends NBD_CMD_DISCONNECT for /dev/nbd<index>.
func nbdDisconnect(index int) error {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(nbdAttrIndex, uint32(index))
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	if _, err := nbdGenl(nbdCmdDisconnect, attrs); err != nil {
		return fmt.Errorf("nbd: NBD_CMD_DISCONNECT /dev/nbd%d: %w", index, err)
	}
	return nil
}

func nbdGenl(cmd uint8, attrs []byte) ([]genetlink.Message, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	fam, err := c.GetFamily(nbdGenlFamily)
	if err != nil {
		return nil, fmt.Errorf("generic netlink family %q: %w", nbdGenlFamily, err)
	}
	req := genetlink.Message{Header: genetlink.Header{Command: cmd, Version: fam.Version}, Data: attrs}
	return c.Execute(req, fam.ID, netlink.Request|netlink.Acknowledge)
}

func (d *nbdDevice) kernelPath() string { return d.path }
func (d *nbdDevice) rdev() uint64       { return d.dev }
func (d *nbdDevice) record() ownerRecord {
	return ownerRecord{Mode: ModeNBD, Path: d.path, NBDIndex: d.index}
}

// expand: the kernel NBD client learns a new size only by reconfiguring;
// NBD_CMD_RECONFIGURE cannot change the size, so an expansion of an nbd-mode
// device is refused until the volume is reattached.
func (d *nbdDevice) expand(int64) error {
	return errors.New("blockdev nbd mode: the kernel NBD device cannot grow while connected; detach and attach the volume")
}

func (d *nbdDevice) close() error {
	return errors.Join(nbdDisconnect(d.index), d.server.Shutdown())
}
