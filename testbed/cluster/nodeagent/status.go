package nodeagent

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podPhase computes a pod's phase from its container statuses and restart
// policy with kubelet's rules:
//   - an init container that failed under restartPolicy Never: Failed;
//   - init containers not done: Pending;
//   - a container that never ran (waiting, no last termination): Pending;
//   - any container running: Running;
//   - all stopped: Running under Always (restarting), Succeeded when all
//     exited 0, Failed under Never, else Running (OnFailure restarts).
func podPhase(policy corev1.RestartPolicy, inits, ctrs []corev1.ContainerStatus, initDone bool) corev1.PodPhase {
	for _, s := range inits {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 && policy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
	}
	if !initDone {
		return corev1.PodPending
	}
	var waiting, running, stopped, succeeded int
	for _, s := range ctrs {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.LastTerminationState.Terminated != nil:
			stopped++
			if s.LastTerminationState.Terminated.ExitCode == 0 {
				succeeded++
			}
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		if policy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if policy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// podConditions returns PodScheduled, PodReadyToStartContainers,
// Initialized, ContainersReady and Ready, keeping transition times of
// conditions whose status did not change.
func podConditions(prev []corev1.PodCondition, initDone, sandbox bool, ctrs []corev1.ContainerStatus, phase corev1.PodPhase, now metav1.Time) []corev1.PodCondition {
	ready := len(ctrs) > 0
	for _, s := range ctrs {
		ready = ready && s.Ready
	}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		ready = false
	}
	want := []struct {
		t  corev1.PodConditionType
		ok bool
	}{
		{corev1.PodScheduled, true},
		{corev1.PodReadyToStartContainers, sandbox},
		{corev1.PodInitialized, initDone},
		{corev1.ContainersReady, ready},
		{corev1.PodReady, ready},
	}
	out := make([]corev1.PodCondition, 0, len(want))
	for _, w := range want {
		st := corev1.ConditionFalse
		if w.ok {
			st = corev1.ConditionTrue
		}
		c := corev1.PodCondition{Type: w.t, Status: st, LastTransitionTime: now}
		for _, p := range prev {
			if p.Type == w.t && p.Status == st {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}

// restartAfterExit reports whether a main container that exited with code
// is restarted under policy.
func restartAfterExit(policy corev1.RestartPolicy, code int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return true
}
