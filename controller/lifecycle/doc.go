// Package lifecycle holds the pure state machines the controllers drive:
// volume state, volume robustness, instance (engine/replica process) state,
// replica mode and replica rebuild. Each machine is a function
// next(state, observed) -> (state, actions) with its transition table in the
// doc comment; the controllers observe the world, call the machine, and carry
// out the actions. Nothing here reads a client, a clock or a setting: time and
// settings arrive as observed values.
//
// State names are Longhorn's (longhorn-manager k8s/pkg/apis/longhorn/v1beta2
// volume.go, instancemanager.go, engine.go), so a controller converts with a
// plain string conversion.
package lifecycle
