// Package api is the manager's REST API, /v1 on port 9500, in the shapes of
// Longhorn's API (longhorn-manager api/router.go, api/model.go; Rancher
// "gdapi" conventions):
//
//   - a resource is a JSON object with id, type, links.self and actions
//     (action name -> URL, only the actions valid in the object's state);
//   - a collection is {"type":"collection","resourceType":T,"data":[...]};
//   - an error is {"type":"error","status":N,"code":C,"message":M};
//   - an action is POST <resource URL>?action=<name> with a JSON body.
//
// Every read comes from the datastore's caches and every write goes through
// the datastore to the API server, so admission (webhook) and controllers see
// API writes exactly as they see kubectl's. Build the handler with NewRouter
// and serve it on :9500 (types.DefaultAPIPort).
package api
