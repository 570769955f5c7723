// Package svcenv reaches Kubernetes Services by the environment Kubernetes
// gives every pod (<NAME>_SERVICE_HOST), for clusters without DNS such as
// the local test bed.
package svcenv

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
)

// Host maps a host[:port] whose host is a Kubernetes Service name (such as
// longhorn-backend) to the Service's cluster IP from the environment
// (<NAME>_SERVICE_HOST, upper case, dashes as underscores). Other hosts,
// and Service names without such a variable, are returned as they are.
func Host(host string, getenv func(string) string) string {
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = host, ""
	}
	if name == "" || strings.Contains(name, ".") || strings.Contains(name, ":") {
		return host
	}
	ip := getenv(strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_SERVICE_HOST")
	if ip == "" {
		return host
	}
	if port == "" {
		return ip
	}
	return net.JoinHostPort(ip, port)
}

// DialFunc is the shape of net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer wraps dial: when the name of addr does not resolve (a DNS error),
// it dials the Service's environment address instead (Host with os.Getenv).
func Dialer(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		var dnsErr *net.DNSError
		if err == nil || !errors.As(err, &dnsErr) {
			return conn, err
		}
		alt := Host(addr, os.Getenv)
		if alt == addr {
			return nil, err
		}
		return dial(ctx, network, alt)
	}
}
