// Command filetarget serves a plain file through this repository's iSCSI
// target, without an engine, for manual runs of libiscsi tools, iscsi-test-cu
// and fio against the frontend alone:
//
//	go run ./engine/frontend/iscsi/internal/filetarget -listen 127.0.0.1:3261 -file /tmp/vol.img
//	iscsi-test-cu -d --test=SCSI iscsi://127.0.0.1:3261/iqn.2019-10.io.longhorn:vol1/1
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/frontend/iscsi"
	"github.com/longhorn-go/longhorn/engine/frontend/iscsi/internal/filebackend"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:3261", "HOST:PORT of the portal")
	file := flag.String("file", "vol.img", "backing file (created and sized when needed)")
	size := flag.Int64("size", 1<<30, "volume size in bytes")
	name := flag.String("volume", "vol1", "volume name (the target is iqn.2019-10.io.longhorn:<volume>)")
	crc := flag.Bool("crc32c", false, "prefer CRC32C header and data digests")
	user := flag.String("chap-user", "", "require CHAP with this user")
	secret := flag.String("chap-secret", "", "CHAP secret")
	debug := flag.Bool("debug", false, "debug logging")
	flag.Parse()
	if *debug {
		logrus.SetLevel(logrus.DebugLevel)
	}
	if err := run(*file, *name, *size, iscsi.Config{Listen: *listen, PreferCRC32C: *crc, CHAPUser: *user, CHAPSecret: *secret}); err != nil {
		fmt.Fprintln(os.Stderr, "filetarget:", err)
		os.Exit(1)
	}
}

func run(file, name string, size int64, cfg iscsi.Config) error {
	be, err := filebackend.Open(file, size)
	if err != nil {
		return err
	}
	defer be.Close()
	t, err := iscsi.New(cfg)
	if err != nil {
		return err
	}
	if err := t.Startup(context.Background(), name, size, be); err != nil {
		return err
	}
	fmt.Println(t.Endpoint())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	<-ch
	return t.Shutdown()
}
