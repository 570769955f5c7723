package framework

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// ErrEndpoint is wrapped by every endpoint parse error.
var ErrEndpoint = errors.New("bad endpoint")

// Target is a parsed frontend endpoint.
type Target struct {
	// Frontend is nbd or iscsi.
	Frontend longhorn.VolumeFrontend
	// Socket is the unix socket path (nbd+unix); Host and Port the TCP
	// address (nbd://, iscsi://).
	Socket, Host string
	Port         int
	// Export is the NBD export name (may be empty).
	Export string
	// IQN and LUN name the iSCSI logical unit.
	IQN string
	LUN int
}

// ParseEndpoint parses an engine endpoint: nbd+unix:///EXPORT?socket=PATH,
// nbd://HOST[:PORT]/EXPORT (NBD URI spec, port 10809 by default) or
// iscsi://HOST[:PORT]/IQN/LUN (libiscsi URL form, port 3260 by default).
// Errors wrap ErrEndpoint and name the part that is wrong.
func ParseEndpoint(s string) (Target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Target{}, fmt.Errorf("%w %q: %v", ErrEndpoint, s, err)
	}
	switch u.Scheme {
	case "nbd+unix":
		sock := u.Query().Get("socket")
		if sock == "" || !strings.HasPrefix(sock, "/") {
			return Target{}, fmt.Errorf("%w %q: socket=%q: want an absolute path", ErrEndpoint, s, sock)
		}
		return Target{Frontend: longhorn.VolumeFrontendNBD, Socket: sock, Export: strings.TrimPrefix(u.Path, "/")}, nil
	case "nbd":
		host, port, err := hostPort(u, 10809)
		if err != nil {
			return Target{}, fmt.Errorf("%w %q: %v", ErrEndpoint, s, err)
		}
		return Target{Frontend: longhorn.VolumeFrontendNBD, Host: host, Port: port, Export: strings.TrimPrefix(u.Path, "/")}, nil
	case "iscsi":
		host, port, err := hostPort(u, 3260)
		if err != nil {
			return Target{}, fmt.Errorf("%w %q: %v", ErrEndpoint, s, err)
		}
		parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
		if len(parts) != 2 || !strings.HasPrefix(parts[0], "iqn.") {
			return Target{}, fmt.Errorf("%w %q: path %q: want /IQN/LUN", ErrEndpoint, s, u.Path)
		}
		lun, err := strconv.Atoi(parts[1])
		if err != nil || lun < 0 || lun > 16383 {
			return Target{}, fmt.Errorf("%w %q: LUN %q: want 0-16383", ErrEndpoint, s, parts[1])
		}
		return Target{Frontend: longhorn.VolumeFrontendISCSI, Host: host, Port: port, IQN: parts[0], LUN: lun}, nil
	}
	return Target{}, fmt.Errorf("%w %q: scheme %q: want nbd+unix, nbd or iscsi", ErrEndpoint, s, u.Scheme)
}

func hostPort(u *url.URL, def int) (string, int, error) {
	host := u.Hostname()
	if host == "" {
		return "", 0, errors.New("no host")
	}
	port := def
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("port %q: want 1-65535", p)
		}
		port = n
	}
	return host, port, nil
}

// FrontendOf returns the frontend an endpoint URI belongs to.
func FrontendOf(uri string) (longhorn.VolumeFrontend, error) {
	t, err := ParseEndpoint(uri)
	return t.Frontend, err
}

// InitiatorIQN is the iSCSI initiator name the framework's clients use.
const InitiatorIQN = "iqn.2026-11.io.longhorn-go:framework"

// QemuImageOpts renders qemu's --image-opts for the byte range [offset,
// offset+size) of the endpoint: the raw format driver with offset and size
// over the nbd or iscsi protocol driver (qemu-block-extra for iscsi).
// Values that hold a comma are rejected (qemu option syntax).
func QemuImageOpts(uri string, offset, size int64) (string, error) {
	t, err := ParseEndpoint(uri)
	if err != nil {
		return "", err
	}
	if offset < 0 || size <= 0 {
		return "", fmt.Errorf("range offset %d size %d: want offset >= 0 and size > 0", offset, size)
	}
	o := []string{"driver=raw", "offset=" + strconv.FormatInt(offset, 10), "size=" + strconv.FormatInt(size, 10)}
	switch {
	case t.Frontend == longhorn.VolumeFrontendNBD && t.Socket != "":
		o = append(o, "file.driver=nbd", "file.server.type=unix", "file.server.path="+t.Socket)
	case t.Frontend == longhorn.VolumeFrontendNBD:
		o = append(o, "file.driver=nbd", "file.server.type=inet", "file.server.host="+t.Host, "file.server.port="+strconv.Itoa(t.Port))
	default:
		o = append(o, "file.driver=iscsi", "file.transport=tcp", "file.portal="+net.JoinHostPort(t.Host, strconv.Itoa(t.Port)),
			"file.target="+t.IQN, "file.lun="+strconv.Itoa(t.LUN), "file.initiator-name="+InitiatorIQN)
	}
	if t.Export != "" {
		o = append(o, "file.export="+t.Export)
	}
	for _, kv := range o {
		if strings.Contains(kv, ",") {
			return "", fmt.Errorf("%w %q: %q holds a comma", ErrEndpoint, uri, kv)
		}
	}
	return strings.Join(o, ","), nil
}
