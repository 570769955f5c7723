package api

import (
	"context"
	"net/http"
)

// routes registers Longhorn's /v1 routes (longhorn-manager api/router.go).
// Collections whose feature this product does not have yet are served
// honestly: their lists are the (empty) objects that exist, and their
// writes answer 501 with a message naming what is missing (notSupported).
func (s *Server) routes() {
	h := s.handle
	m := s.mux
	m.HandleFunc("GET /{$}", h(s.apiVersions))
	m.HandleFunc("GET /v1", h(s.root))
	m.HandleFunc("GET /v1/apiversions", h(s.apiVersions))
	m.HandleFunc("GET /v1/apiversions/v1", h(s.root))
	m.HandleFunc("GET /v1/schemas", h(s.listSchemas))
	m.HandleFunc("GET /v1/schemas/{id}", h(s.getSchema))

	m.HandleFunc("GET /v1/settings", h(s.listSettings))
	m.HandleFunc("GET /v1/settings/{name}", h(s.getSetting))
	m.HandleFunc("PUT /v1/settings/{name}", h(s.updateSetting))

	m.HandleFunc("GET /v1/volumes", h(s.listVolumes))
	m.HandleFunc("POST /v1/volumes", h(s.createVolume))
	m.HandleFunc("GET /v1/volumes/{name}", h(s.getVolume))
	m.HandleFunc("DELETE /v1/volumes/{name}", h(s.deleteVolume))
	m.HandleFunc("POST /v1/volumes/{name}", h(s.volumeAction))

	m.HandleFunc("GET /v1/nodes", h(s.listNodes))
	m.HandleFunc("GET /v1/nodes/{name}", h(s.getNode))
	m.HandleFunc("PUT /v1/nodes/{name}", h(s.updateNode))
	m.HandleFunc("DELETE /v1/nodes/{name}", h(s.deleteNode))
	m.HandleFunc("POST /v1/nodes/{name}", h(s.nodeAction))
	m.HandleFunc("GET /v1/disktags", h(s.listDiskTags))
	m.HandleFunc("GET /v1/nodetags", h(s.listNodeTags))

	m.HandleFunc("GET /v1/engineimages", h(s.listEngineImages))
	m.HandleFunc("POST /v1/engineimages", h(s.createEngineImage))
	m.HandleFunc("GET /v1/engineimages/{name}", h(s.getEngineImage))
	m.HandleFunc("DELETE /v1/engineimages/{name}", h(s.deleteEngineImage))
	m.HandleFunc("GET /v1/instancemanagers", h(s.listInstanceManagers))
	m.HandleFunc("GET /v1/instancemanagers/{name}", h(s.getInstanceManager))
	m.HandleFunc("GET /v1/volumeattachments", h(s.listVolumeAttachments))
	m.HandleFunc("GET /v1/volumeattachments/{name}", h(s.getVolumeAttachment))
	m.HandleFunc("GET /v1/events", h(s.listEvents))

	m.HandleFunc("GET /v1/recurringjobs", h(s.listRecurringJobs))
	m.HandleFunc("POST /v1/recurringjobs", h(s.createRecurringJob))
	m.HandleFunc("GET /v1/recurringjobs/{name}", h(s.getRecurringJob))
	m.HandleFunc("PUT /v1/recurringjobs/{name}", h(s.updateRecurringJob))
	m.HandleFunc("DELETE /v1/recurringjobs/{name}", h(s.deleteRecurringJob))

	s.backupRoutes()
	s.pendingRoutes()

	m.HandleFunc("GET /v1/ws/{resource}", s.serveStream)
	m.HandleFunc("GET /v1/ws/{period}/{resource}", s.serveStream)
}

// collectionTypes maps every collection the API serves to its resource
// type, in the order the API root lists them.
var collectionTypes = []struct{ coll, typ string }{
	{"settings", "setting"}, {"volumes", "volume"}, {"nodes", "node"}, {"disktags", "tag"}, {"nodetags", "tag"},
	{"engineimages", "engineImage"}, {"instancemanagers", "instanceManager"}, {"volumeattachments", "volumeAttachment"},
	{"events", "event"}, {"recurringjobs", "recurringJob"}, {"orphans", "orphan"},
	{"backuptargets", "backupTarget"}, {"backupvolumes", "backupVolume"}, {"backups", "backup"},
	{"backingimages", "backingImage"}, {"backupbackingimages", "backupBackingImage"},
	{"systembackups", "systemBackup"}, {"systemrestores", "systemRestore"},
	{"supportbundles", "supportBundle"}, {"sharemanagers", "shareManager"},
}

// root answers GET /v1 with the links to every collection (gdapi API
// version resource).
func (s *Server) root(_ context.Context, _ *http.Request, u urls) (int, any, error) {
	res := u.newResource("apiVersion", "apiversions", "v1")
	res.Links["self"] = u.base + "/v1"
	res.Links["schemas"] = u.collection("schemas")
	for _, c := range collectionTypes {
		res.Links[c.coll] = u.collection(c.coll)
	}
	return http.StatusOK, res, nil
}

// apiVersions answers GET / and GET /v1/apiversions: the collection of API
// versions (only v1), with links.latest.
func (s *Server) apiVersions(_ context.Context, _ *http.Request, u urls) (int, any, error) {
	v1 := Resource{ID: "v1", Type: "apiVersion", Links: map[string]string{"self": u.base + "/v1"}, Actions: map[string]string{}}
	c := u.newCollection("apiVersion", "apiversions", []Resource{v1})
	c.Links["latest"] = u.base + "/v1"
	return http.StatusOK, c, nil
}
