package kubernetes

import (
	"context"
	"errors"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Prune implements envdeploy.Backend: every group of the namespace whose
// envdeploy labels orphaned accepts is deleted whole. The caller's rule
// scopes it to one store (envdeploy.PruneRule): another store's objects
// are never passed as orphans. It returns "<group> (<n> objects)" per
// group removed.
func (p *Provider) Prune(ctx context.Context, orphaned func(labels map[string]string) bool) ([]string, error) {
	list := metav1.ListOptions{LabelSelector: LabelSandbox}
	groups := map[string]map[string]string{} // label value -> envdeploy labels
	counts := map[string]int{}
	add := func(m metav1.ObjectMeta) {
		g := m.Labels[LabelSandbox]
		if _, ok := groups[g]; !ok {
			groups[g] = envLabels(m)
		}
		counts[g]++
	}
	core := p.cs.CoreV1()
	pods, err := core.Pods(p.ns).List(ctx, list)
	if err != nil {
		return nil, p.wrap("list pods", err)
	}
	for _, o := range pods.Items {
		add(o.ObjectMeta)
	}
	svcs, err := core.Services(p.ns).List(ctx, list)
	if err != nil {
		return nil, p.wrap("list services", err)
	}
	for _, o := range svcs.Items {
		add(o.ObjectMeta)
	}
	secs, err := core.Secrets(p.ns).List(ctx, list)
	if err != nil {
		return nil, p.wrap("list secrets", err)
	}
	for _, o := range secs.Items {
		add(o.ObjectMeta)
	}
	var removed []string
	var errs []error
	for g, l := range groups {
		if !orphaned(l) {
			continue
		}
		if err := p.deleteByLabel(ctx, LabelSandbox+"="+g); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, g+" ("+strconv.Itoa(counts[g])+" objects)")
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}
