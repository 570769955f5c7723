// Package imrpc holds the gRPC contracts of the instance manager, generated from
// imrpc.proto (ProcessManagerService), instance.proto (imrpc.InstanceService)
// and proxy.proto (imrpc.ProxyEngineService) by `make proto`, plus the API
// versions the server reports in VersionGet.
package imrpc

// API versions reported by VersionGet. A client (engineapi) supports a range of
// versions and refuses an instance manager whose [Min, Current] range does not
// overlap it. Bump Current on any incompatible change of a service, and Min when
// the server drops support for an older client.
const (
	// InstanceManagerAPIVersion is the version of ProcessManagerService and InstanceService.
	InstanceManagerAPIVersion = 1
	// InstanceManagerAPIMinVersion is the oldest client version still served.
	InstanceManagerAPIMinVersion = 1
	// InstanceManagerProxyAPIVersion is the version of ProxyEngineService.
	InstanceManagerProxyAPIVersion = 1
	// InstanceManagerProxyAPIMinVersion is the oldest proxy client version still served.
	InstanceManagerProxyAPIMinVersion = 1
)
