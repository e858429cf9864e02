package triggers

import (
	"context"
	"sort"
	"time"
)

// Barrier holds a provoking call's answer until the fires it provoked
// settle.
type Barrier struct {
	e           *Engine
	ids         []string
	dones       []chan struct{}
	timeout     time.Duration
	timeoutJSON any
}

func (b *Barrier) add(id string, done chan struct{}, bs *barrierSpec, def time.Duration) {
	b.ids = append(b.ids, id)
	b.dones = append(b.dones, done)
	d, j := bs.timeout, any(bs.timeoutJSON)
	if d == 0 {
		d, j = def, jsonSeconds(def)
	}
	if d > b.timeout {
		b.timeout, b.timeoutJSON = d, j
	}
}

func jsonSeconds(d time.Duration) any {
	if d%time.Second == 0 {
		return int64(d / time.Second)
	}
	return d.Seconds()
}

// TriggerIDs lists the triggers whose fires the barrier waits for.
func (b *Barrier) TriggerIDs() []string {
	if b == nil {
		return nil
	}
	return append([]string{}, b.ids...)
}

// Wait blocks until every fire this call provoked has settled, the
// barrier's timeout passes (it then writes trigger_barrier_timeout and
// returns true; the fires keep running), or ctx is done.
func (b *Barrier) Wait(ctx context.Context) (timedOut bool) {
	if b == nil || len(b.dones) == 0 {
		return false
	}
	timer := b.e.real.After(b.timeout)
	for i, done := range b.dones {
		select {
		case <-done:
		case <-ctx.Done():
			return false
		case <-timer:
			var open []string
			for j := i; j < len(b.dones); j++ {
				select {
				case <-b.dones[j]:
				default:
					open = append(open, b.ids[j])
				}
			}
			sort.Strings(open)
			open = dedupe(open)
			b.e.host.WriteTrajectory(TrajectoryEvent{Type: "trigger_barrier_timeout", Fields: []Field{
				{"source", "trigger_engine"}, {"at", "provoking_call"}, {"trigger_ids", open}, {"timeout_s", b.timeoutJSON},
			}})
			return true
		}
	}
	return false
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
