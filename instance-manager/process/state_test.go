package process

import "testing"

func TestNext(t *testing.T) {
	// want[from][event]
	want := map[State][3]State{
		StateStarting: {StateRunning, StateStopping, StateError},
		StateRunning:  {StateRunning, StateStopping, StateError},
		StateStopping: {StateStopping, StateStopping, StateStopped},
		StateStopped:  {StateStopped, StateStopped, StateStopped},
		StateError:    {StateError, StateStopped, StateError},
	}
	for from, row := range want {
		for ev, to := range row {
			if got := Next(from, Event(ev)); got != to {
				t.Errorf("Next(%s, %s) = %s, want %s", from, Event(ev), got, to)
			}
		}
	}
	if got := Next(StateRunning, Event(99)); got != StateRunning {
		t.Errorf("unknown event changed state to %s", got)
	}
}
