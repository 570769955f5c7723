package controller

// isResponsibleFor decides whether the manager on controllerID acts on an
// object (Longhorn's isControllerResponsibleFor, controller_manager.go):
//
//	responsible = controllerID == preferred
//	           || (current == controllerID && unavailable(preferred))
//	           || (unavailable(current) && unavailable(preferred))
//
// where unavailable(n) is n == "" or the node is down, deleted or missing its
// manager (isDown). preferred is the node the object should live on
// (spec.nodeID for volumes, engines, replicas and instance managers); current
// is status.ownerID. When several managers think they are responsible, the
// one whose OwnerID write succeeds wins; the others get a conflict.
func isResponsibleFor(controllerID, preferred, current string, isDown func(node string) bool) bool {
	unavailable := func(n string) bool { return n == "" || isDown(n) }
	switch {
	case controllerID == preferred:
		return true
	case current == controllerID && unavailable(preferred):
		return true
	case unavailable(current) && unavailable(preferred):
		return true
	}
	return false
}
