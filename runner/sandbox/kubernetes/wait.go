package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// ErrPodNotRunning wraps every *PodError.
var ErrPodNotRunning = errors.New("pod did not start")

// PodError is a Pod that did not reach Running: why, and its events (the
// node's image pull failures are only there).
type PodError struct {
	Pod     string
	Reason  string // "ImagePullBackOff: ...", "timed out after 2m0s", ...
	Events  []string
	Timeout bool
}

func (e *PodError) Error() string {
	msg := fmt.Sprintf("kubernetes: pod %s did not start: %s", e.Pod, e.Reason)
	if len(e.Events) == 0 {
		return msg + " (the pod has no events)"
	}
	return msg + "; its events:\n  " + strings.Join(e.Events, "\n  ")
}

func (e *PodError) Unwrap() error { return ErrPodNotRunning }

// fatalWaiting are container waiting reasons that no wait cures. A first
// ErrImagePull is not among them (a registry blip is retried); the
// kubelet's next state, ImagePullBackOff, is.
var fatalWaiting = []string{"ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError"}

// podState tells whether pod runs (done), or can no longer (a reason).
func podState(pod *corev1.Pod) (done bool, failed string) {
	switch pod.Status.Phase {
	case corev1.PodRunning:
		return true, ""
	case corev1.PodFailed, corev1.PodSucceeded:
		r := string(pod.Status.Phase)
		if pod.Status.Reason != "" {
			r += ": " + pod.Status.Reason
		}
		if pod.Status.Message != "" {
			r += ": " + pod.Status.Message
		}
		return false, r
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && slices.Contains(fatalWaiting, w.Reason) {
			return false, w.Reason + ": " + w.Message
		}
	}
	return false, ""
}

// waitRunning watches Pod name until it runs, fails, or
// Config.DeployTimeout passes; a failure is a *PodError with the events.
func (p *Provider) waitRunning(ctx context.Context, name string) error {
	limit := time.Duration(p.cfg.DeployTimeout)
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	pods := p.cs.CoreV1().Pods(p.ns)
	last := "pending"
	for {
		pod, err := pods.Get(wctx, name, metav1.GetOptions{})
		if err != nil {
			if wctx.Err() != nil {
				break
			}
			return p.wrap("get pod "+name, err)
		}
		if done, failed := podState(pod); done {
			return nil
		} else if failed != "" {
			return p.podError(ctx, name, failed, false)
		}
		last = describeWaiting(pod)
		w, err := pods.Watch(wctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: pod.ResourceVersion})
		if err != nil {
			if wctx.Err() != nil {
				break
			}
			return p.wrap("watch pod "+name, err)
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue // a watch error: start over from a Get
			}
			if ev.Type == watch.Deleted {
				// Deleted under the deploy (a prune, a person): it will
				// never run, and waiting would only run out the timeout.
				w.Stop()
				return p.podError(ctx, name, "deleted while starting, last "+describeWaiting(pod), false)
			}
			if done, failed := podState(pod); done {
				w.Stop()
				return nil
			} else if failed != "" {
				w.Stop()
				return p.podError(ctx, name, failed, false)
			}
			last = describeWaiting(pod)
		}
		w.Stop()
		if wctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return p.podError(ctx, name, fmt.Sprintf("not running after %s (deploy_timeout), last %s", limit, last), true)
}

// describeWaiting is the Pod's state for a timeout message.
func describeWaiting(pod *corev1.Pod) string {
	s := "phase " + string(pod.Status.Phase)
	if pod.Spec.NodeName == "" {
		s += ", not scheduled"
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			s += ", container waiting: " + w.Reason
			if w.Message != "" {
				s += ": " + w.Message
			}
		}
	}
	return s
}

// podError builds the *PodError of name with its events, oldest first.
func (p *Provider) podError(ctx context.Context, name, reason string, timeout bool) error {
	e := &PodError{Pod: p.ns + "/" + name, Reason: reason, Timeout: timeout}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", name), fields.OneTermEqualSelector("involvedObject.kind", "Pod"))
	evs, err := p.cs.CoreV1().Events(p.ns).List(ectx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil {
		e.Events = []string{"(events could not be read: " + err.Error() + ")"}
		return e
	}
	items := evs.Items
	slices.SortStableFunc(items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	for _, ev := range items {
		line := ev.Type + " " + ev.Reason + ": " + ev.Message
		if ev.Count > 1 {
			line += fmt.Sprintf(" (x%d)", ev.Count)
		}
		e.Events = append(e.Events, line)
	}
	return e
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
