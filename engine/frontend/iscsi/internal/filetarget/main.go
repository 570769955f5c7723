package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/frontend/iscsi"
	"github.com/longhorn-go/longhorn/engine/frontend/iscsi/internal/filebackend"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:13261", "")
	file := flag.String("file", "/tmp/iscsi-dev/vol.img", "")
	size := flag.Int64("size", 1<<30, "")
	crc := flag.Bool("crc", false, "")
	debug := flag.Bool("debug", false, "")
	flag.Parse()
	if *debug {
		logrus.SetLevel(logrus.DebugLevel)
	}
	be, err := filebackend.Open(*file, *size)
	if err != nil {
		panic(err)
	}
	t, err := iscsi.New(iscsi.Config{Listen: *listen, PreferCRC32C: *crc})
	if err != nil {
		panic(err)
	}
	if err := t.Startup(context.Background(), "vol1", *size, be); err != nil {
		panic(err)
	}
	fmt.Println(t.Endpoint())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	<-ch
	t.Shutdown()
}
