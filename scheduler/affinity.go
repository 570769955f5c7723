package scheduler

import "time"

// nodeSets are the node groups getDiskCandidates tries in order.
type nodeSets struct {
	unused                       map[string]Node // no replica of the volume
	unusedInUnusedZones          map[string]Node // no replica on the node or in its zone
	unusedAfterEviction          map[string]Node // only evicting replicas on the node
	unusedInUnusedZonesAfterEvic map[string]Node // only evicting replicas on the node and in its zone
	used                         map[string]Node // holds a non-evicting replica
}

// buildNodeSets drops nodes whose tags miss the volume's node selector and
// sorts the rest into the anti-affinity groups. Under replica-auto-balance
// best-effort a used node also counts as unused.
func buildNodeSets(nodes map[string]Node, p placement, req diskRequest, rc *collector) nodeSets {
	s := nodeSets{map[string]Node{}, map[string]Node{}, map[string]Node{}, map[string]Node{}, map[string]Node{}}
	bestEffort := req.settings.ReplicaAutoBalance == ReplicaAutoBalanceBestEffort
	for name, n := range nodes {
		if !IsSelectorsInTags(n.Tags, req.volume.NodeSelector, req.settings.AllowEmptyNodeSelectorVolume) {
			rc.add(n.Name, "", ReasonTagsNotFulfilled, "node tags %v do not match the node selector %v", n.Tags, req.volume.NodeSelector)
			continue
		}
		if !p.usedNodes[name] || bestEffort {
			s.unused[name] = n
		} else {
			s.used[name] = n
		}
		if p.onlyEvictingNodes[name] {
			s.unusedAfterEviction[name] = n
			if p.onlyEvictingZones[n.Zone] || bestEffort {
				s.unusedInUnusedZonesAfterEvic[name] = n
			}
		}
		if !p.usedZones[n.Zone] {
			s.unusedInUnusedZones[name] = n
		}
	}
	return s
}

// diskCandidates returns the best group of disks a replica may go to
// (Longhorn's getDiskCandidates). An unused node in an unused zone is always
// tried first; then, by the anti-affinity flags:
//
//	zone hard            : unused-after-eviction nodes in unused-after-eviction zones
//	zone soft, node hard : unused nodes in any zone, then unused-after-eviction nodes
//	zone soft, node soft : unused nodes in any zone, then used nodes
//
// The first group with at least one disk wins. When none has one, every node
// left out by anti-affinity gets a ReasonSchedulingFailed explaining why.
func diskCandidates(nodes map[string]Node, disks map[string]map[string]bool, req diskRequest, now time.Time, rc *collector) []candidateDisk {
	replenishing := !req.ignoreFailed && replenishingNow(req.volume, req.settings, now)
	p := currentPlacement(req.replicas, nodes, req.ignoreFailed, replenishing)
	sets := buildNodeSets(nodes, p, req, rc)

	groups := []map[string]Node{sets.unusedInUnusedZones}
	switch {
	case !req.settings.ZoneSoftAntiAffinity:
		groups = append(groups, sets.unusedInUnusedZonesAfterEvic)
	case !req.settings.NodeSoftAntiAffinity:
		groups = append(groups, sets.unused, sets.unusedAfterEviction)
	default:
		groups = append(groups, sets.unused, sets.used)
	}
	tried := map[string]bool{}
	for _, g := range groups {
		var found []candidateDisk
		for _, name := range sortedKeys(g) {
			tried[name] = true
			found = append(found, filterNodeDisks(g[name], disks[name], req, rc)...)
		}
		found = preferEmptyDisks(found, req, rc)
		if len(found) > 0 {
			return found
		}
	}
	explainAntiAffinity(sets, tried, p, req.settings, rc)
	return nil
}

// explainAntiAffinity records why nodes that passed every other filter were
// never tried.
func explainAntiAffinity(sets nodeSets, tried map[string]bool, p placement, s Settings, rc *collector) {
	all := map[string]Node{}
	for _, g := range []map[string]Node{sets.unused, sets.used} {
		for k, v := range g {
			all[k] = v
		}
	}
	for _, name := range sortedKeys(all) {
		if tried[name] {
			continue
		}
		n := all[name]
		switch {
		case !s.ZoneSoftAntiAffinity && p.usedZones[n.Zone]:
			rc.add(name, "", ReasonSchedulingFailed, "zone %q already holds a replica of the volume and zone anti-affinity is hard", n.Zone)
		default:
			rc.add(name, "", ReasonSchedulingFailed, "node already holds a replica of the volume and node anti-affinity is hard")
		}
	}
}
