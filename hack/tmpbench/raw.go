package main

import (
	"fmt"
	"io"
	"net"
	"sort"
	"time"
)

func rawServe(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		panic(err)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			req := make([]byte, 26)
			resp := make([]byte, 26+4096)
			for {
				if _, err := io.ReadFull(c, req); err != nil {
					return
				}
				if _, err := c.Write(resp); err != nil {
					return
				}
			}
		}()
	}
}

func rawClient(addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		panic(err)
	}
	req := make([]byte, 26)
	resp := make([]byte, 26+4096)
	var lat []time.Duration
	for i := 0; i < 5000; i++ {
		t := time.Now()
		c.Write(req)
		io.ReadFull(c, resp)
		lat = append(lat, time.Since(t))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Println("raw p50", lat[len(lat)/2], "p90", lat[len(lat)*9/10], "p99", lat[len(lat)*99/100])
}
