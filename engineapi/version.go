package engineapi

import "fmt"

// API version ranges this client speaks. They match the server versions in
// instance-manager/imrpc as of this build.
const (
	MinInstanceManagerAPIVersion     = 1
	CurrentInstanceManagerAPIVersion = 1
	MinProxyAPIVersion               = 1
	CurrentProxyAPIVersion           = 1
)

// CheckCompatibility returns an error wrapping ErrIncompatible when the
// instance manager's [Min, Current] ranges do not overlap the client's
// (Longhorn's CheckInstanceManagerCompatibility rule, applied to both the
// instance and the proxy API).
func CheckCompatibility(v APIVersions) error {
	if err := overlap("instance manager", v.InstanceManagerMin, v.InstanceManagerCurrent, MinInstanceManagerAPIVersion, CurrentInstanceManagerAPIVersion); err != nil {
		return err
	}
	return overlap("instance manager proxy", v.ProxyMin, v.ProxyCurrent, MinProxyAPIVersion, CurrentProxyAPIVersion)
}

func overlap(what string, srvMin, srvCur, cliMin, cliCur int64) error {
	if srvMin > srvCur || srvCur < cliMin || srvMin > cliCur {
		return fmt.Errorf("%w: %s API versions %d..%d, this client supports %d..%d", ErrIncompatible, what, srvMin, srvCur, cliMin, cliCur)
	}
	return nil
}
