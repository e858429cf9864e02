package kubecluster

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	k8s "k8s.io/client-go/kubernetes"
)

// bindWorkers is how many bind calls are in flight at once: binding one
// Pod at a time would make the harness, not the provider or the API
// server, the bottleneck of the scale test (kube-scheduler binds in
// parallel too).
const bindWorkers = 16

// bindLoop stands in for the scheduler: it watches unbound Pods and binds
// each to the next fake node. A broken watch is started again (after a
// short pause, so a stopping API server is not hammered) until ctx ends.
func (c *Cluster) bindLoop(ctx context.Context, cs k8s.Interface) {
	defer close(c.bindDone)
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, bindWorkers)
	next := 0
	// seen keeps a Pod from being bound twice: it is listed, then shows
	// up in watch events until its binding is visible. A failed bind
	// leaves it, so the next list binds the Pod again.
	var seenMu sync.Mutex
	seen := map[types.UID]bool{}
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "").String()}
	bind := func(pod *corev1.Pod) {
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || len(pod.Spec.Containers) == 0 {
			return
		}
		if p := c.opt.NoBindImagePrefix; p != "" && strings.HasPrefix(pod.Spec.Containers[0].Image, p) {
			return
		}
		seenMu.Lock()
		dup := seen[pod.UID]
		seen[pod.UID] = true
		seenMu.Unlock()
		if dup {
			return
		}
		node := c.Nodes[next%len(c.Nodes)]
		next++
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		c.mu.Lock()
		c.binds++
		c.mu.Unlock()
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := cs.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
				c.opt.Logger.Debug("bind", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				seenMu.Lock()
				delete(seen, pod.UID)
				seenMu.Unlock()
			}
		})
	}
	for ctx.Err() == nil {
		list, err := cs.CoreV1().Pods("").List(ctx, opts)
		if err == nil {
			for i := range list.Items {
				bind(&list.Items[i])
			}
			o := opts
			o.ResourceVersion = list.ResourceVersion
			if w, err := cs.CoreV1().Pods("").Watch(ctx, o); err == nil {
				for ev := range w.ResultChan() {
					if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
						bind(pod)
					}
				}
				w.Stop()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Binds is the number of bind calls the cluster has made.
func (c *Cluster) Binds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.binds
}
