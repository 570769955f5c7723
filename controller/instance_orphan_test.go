package controller

import (
	"reflect"
	"testing"
	"time"
)

func TestOrphanTrackerDue(t *testing.T) {
	var tr orphanTracker
	t0 := time.Unix(1000, 0)
	if got := tr.due("im", map[string]bool{"r1": true, "r2": false}, t0, 30*time.Second); got != nil {
		t.Fatalf("first sighting: %v, want none", got)
	}
	if got := tr.due("im", map[string]bool{"r1": true}, t0.Add(10*time.Second), 30*time.Second); got != nil {
		t.Fatalf("within grace: %v, want none", got)
	}
	if got := tr.due("im", map[string]bool{"r1": true}, t0.Add(30*time.Second), 30*time.Second); !reflect.DeepEqual(got, []string{"r1"}) {
		t.Fatalf("after grace: %v, want [r1]", got)
	}
	// Its object came back (informer lag): forgotten, the grace starts again.
	tr.due("im", map[string]bool{"r1": false}, t0.Add(31*time.Second), 30*time.Second)
	if got := tr.due("im", map[string]bool{"r1": true}, t0.Add(40*time.Second), 30*time.Second); got != nil {
		t.Fatalf("orphan again after its object came back: %v, want none", got)
	}
	// Gone from the list: forgotten; other instance managers are untouched.
	tr.due("im2", map[string]bool{"r1": true}, t0, 30*time.Second)
	tr.due("im", map[string]bool{}, t0.Add(50*time.Second), 30*time.Second)
	if _, ok := tr.since["im"]["r1"]; ok {
		t.Fatalf("im/r1 still tracked after it left the list")
	}
	if _, ok := tr.since["im2"]["r1"]; !ok {
		t.Fatalf("im2/r1 forgotten by im's listing")
	}
}
