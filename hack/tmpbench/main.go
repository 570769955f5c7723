package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/longhorn-go/longhorn/engine/dataconn"
)

func main() {
	if os.Args[1] == "rawserve" {
		rawServe(os.Args[2])
		return
	}
	if os.Args[1] == "raw" {
		rawClient(os.Args[2])
		return
	}
	if os.Args[1] == "serve" {
		serve(os.Args[2])
		return
	}
	c, err := dataconn.Dial(context.Background(), "tcp", os.Args[1], dataconn.Options{Conns: 1})
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 4096)
	var lat []time.Duration
	for i := 0; i < 5000; i++ {
		t := time.Now()
		if _, err := c.ReadAt(buf, int64(i%1000)*4096); err != nil {
			panic(err)
		}
		lat = append(lat, time.Since(t))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Println("p50", lat[len(lat)/2], "p90", lat[len(lat)*9/10], "p99", lat[len(lat)*99/100])
}
