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

// The engine API versions the manager speaks (Longhorn's engineapi
// CurrentCLIAPIVersion and friends): the engine binary of this build
// reports the same ones (engine/controller VersionDetailGet), and the
// manager's EngineImage status shows them.
const (
	MinCLIAPIVersion            = 8
	CurrentCLIAPIVersion        = 9
	MinControllerAPIVersion     = 5
	CurrentControllerAPIVersion = 5
	MinDataFormatVersion        = 1
	CurrentDataFormatVersion    = 1
)

// CheckCompatibility returns an error wrapping ErrIncompatible when the
// instance manager's [Min, Current] ranges do not overlap the client's
// (Longhorn's CheckInstanceManagerCompatibility rule, applied to the
// instance API and, when the instance manager has one, the proxy API).

// ProxySupported reports whether the instance manager serves the engine
// proxy: an instance manager older than the proxy reports proxy API
// version 0 (Longhorn's CheckInstanceManagerProxySupport).
func ProxySupported(v APIVersions) bool { return v.ProxyCurrent >= MinProxyAPIVersion }

func CheckCompatibility(v APIVersions) error {
	if err := overlap("instance manager", v.InstanceManagerMin, v.InstanceManagerCurrent, MinInstanceManagerAPIVersion, CurrentInstanceManagerAPIVersion); err != nil {
		return err
	}
	if !ProxySupported(v) {
		return nil // older than the proxy: engines are reached directly (Handler.Engine)
	}
	return overlap("instance manager proxy", v.ProxyMin, v.ProxyCurrent, MinProxyAPIVersion, CurrentProxyAPIVersion)
}

func overlap(what string, srvMin, srvCur, cliMin, cliCur int64) error {
	if srvMin > srvCur || srvCur < cliMin || srvMin > cliCur {
		return fmt.Errorf("%w: %s API versions %d..%d, this client supports %d..%d", ErrIncompatible, what, srvMin, srvCur, cliMin, cliCur)
	}
	return nil
}
