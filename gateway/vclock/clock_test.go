package vclock

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func TestRateAdvancesVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil)
		if _, ok := c.Now(); ok {
			t.Fatal("unarmed clock reads a time")
		}
		if _, err := c.Arm(t0, 3600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // fake time inside the bubble
		now, _ := c.Now()
		if want := t0.Add(2 * time.Hour); !now.Equal(want) {
			t.Fatalf("rate 3600 after 2 s: got %s want %s", FormatTime(now), FormatTime(want))
		}
	})
}

func TestFrozenClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil)
		if _, err := c.Arm(t0, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		if now, _ := c.Now(); !now.Equal(t0) {
			t.Fatalf("rate 0 moved: %s", FormatTime(now))
		}
	})
}

func TestRearmReanchorsAndBumpsGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil)
		var seen []State
		unsub := c.Subscribe(func(s State) { seen = append(seen, s) })
		defer unsub()
		c.Arm(t0, 60)
		time.Sleep(10 * time.Second)
		jump := t0.Add(24 * time.Hour)
		c.Arm(jump, 1)
		time.Sleep(3 * time.Second)
		now, _ := c.Now()
		if want := jump.Add(3 * time.Second); !now.Equal(want) {
			t.Fatalf("after re-arm: got %s want %s", FormatTime(now), FormatTime(want))
		}
		c.Clear()
		if len(seen) != 3 || !seen[0].Armed || !seen[1].Armed || seen[2].Armed {
			t.Fatalf("subscriber saw %+v", seen)
		}
		if seen[2].Generation != 3 || c.Generation() != 3 {
			t.Fatalf("generation %d, want 3", c.Generation())
		}
	})
}

func TestSleepUntilReplansOnRearm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil)
		c.Arm(t0, 1)
		target := t0.Add(time.Hour)
		start := time.Now()
		woke := make(chan time.Duration, 1)
		go func() {
			if err := c.SleepUntil(context.Background(), target); err != nil {
				t.Error(err)
			}
			woke <- time.Since(start)
		}()
		time.Sleep(10 * time.Minute)
		c.Arm(t0.Add(59*time.Minute), 1) // now one virtual minute short
		if got := <-woke; got != 11*time.Minute {
			t.Fatalf("woke after %s of real time, want 11m", got)
		}
		// Unarmed and frozen clocks wait for the next arm.
		c.Clear()
		go func() {
			woke <- 0
			_ = c.SleepUntil(context.Background(), target.Add(time.Hour))
			woke <- time.Since(start)
		}()
		<-woke
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case <-woke:
			t.Fatal("SleepUntil returned on an unarmed clock")
		default:
		}
		c.Arm(target.Add(2*time.Hour), 0)
		if got := <-woke; got != 71*time.Minute {
			t.Fatalf("woke at %s, want at the arm (71m)", got)
		}
	})
}

func TestSleepUntilCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.SleepUntil(ctx, t0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestSaturationAtMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil)
		if _, err := c.Arm(MaxInstant, 0); err != nil {
			t.Fatalf("frozen at max refused: %v", err)
		}
		if _, err := c.Arm(MaxInstant, 1); err == nil {
			t.Fatal("rate 1 at max accepted")
		}
		edge := MaxInstant.Add(-86400 * 10 * time.Second)
		if _, err := c.Arm(edge, 10); err != nil {
			t.Fatalf("edge of the horizon refused: %v", err)
		}
		time.Sleep(48 * time.Hour)
		now, _ := c.Now()
		if !now.Equal(MaxInstant) {
			t.Fatalf("did not saturate: %s", FormatTime(now))
		}
		if FormatTime(now) != "9999-12-31T23:59:59.999999Z" {
			t.Fatalf("format %s", FormatTime(now))
		}
	})
}

func TestParseTime(t *testing.T) {
	accepted := map[string]string{
		"2026-03-01T09:00:00Z":           "2026-03-01T09:00:00Z",
		"2026-03-01t09:00:00z":           "2026-03-01T09:00:00Z",
		"2026-03-01 09:00:00Z":           "2026-03-01T09:00:00Z",
		"2026-03-01T09:00:00.5Z":         "2026-03-01T09:00:00.500000Z",
		"2026-03-01T09:00:00.123456789Z": "2026-03-01T09:00:00.123456Z",
		"2026-03-01T10:30:00+01:30":      "2026-03-01T09:00:00Z",
		"2026-02-28T23:00:00-10:00":      "2026-03-01T09:00:00Z",
		"9999-12-31T23:59:59.999999Z":    "9999-12-31T23:59:59.999999Z",
		"2024-02-29T00:00:00Z":           "2024-02-29T00:00:00Z",
	}
	for in, want := range accepted {
		got, err := ParseTime("virtual_time", in)
		if err != nil || FormatTime(got) != want {
			t.Errorf("%q: got %s, %v; want %s", in, FormatTime(got), err, want)
		}
	}
	rejected := []string{
		"not-a-date", "2026-03-01T09:00:00", "2026-03-01", "2026-03-01T09:00:00+01:00:00",
		"2026-03-01T09:00Z", "20260301T090000Z", "2026-W09-1T09:00:00Z", "2026-060T09:00:00Z",
		" 2026-03-01T09:00:00Z", "2026-03-01T09:00:00Z ", "2026-03-01T09:00:00Z\n", "2026-13-01T09:00:00Z",
		"2026-02-29T09:00:00Z", "2026-03-01T24:00:00Z", "2026-03-01T09:60:00Z", "2026-03-01T09:00:60Z",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", "2026-03-01T09:00:00+24:00",
		"2026-03-01T09:00:00.Z", "",
	}
	for _, in := range rejected {
		if _, err := ParseTime("virtual_time", in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestParseRate(t *testing.T) {
	ok := map[string]float64{"": 1, "null": 1, "0": 0, "3600": 3600, "86400": 86400, "0.5": 0.5, "8.64e4": 86400}
	for in, want := range ok {
		got, err := ParseRate(json.RawMessage(in))
		if err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	bad := map[string]string{
		`"3600"`: "rate must be a number, got str", "true": "rate must be a number, got bool",
		"[1]": "rate must be a number, got list", `{}`: "rate must be a number, got dict",
		"-1": "rate must be non-negative", "86400.001": "rate 86400.001 exceeds max 86400 (1 real s = 1 virtual day)",
		"1e9": "rate 1e+09 exceeds max 86400 (1 real s = 1 virtual day)", "1e400": "rate must be a finite number, got 1e400",
		"-1e400": "rate must be a finite number, got -1e400",
	}
	for in, want := range bad {
		_, err := ParseRate(json.RawMessage(in))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Msg != want {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	ok := map[string]Duration{
		"PT2H": 7200 * Second, "P1DT6H": 30 * 3600 * Second, "PT30M": 1800 * Second, "P1W": 7 * 86400 * Second,
		"PT0.5S": 500000, "PT1.0000005S": 1000000, "PT1.0000015S": 1000002, "PT0S": 0, "P1DT": 86400 * Second,
	}
	for in, want := range ok {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("%s: got %d %v want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"P", "PT", "P1Y", "P1M", "PT1H30", "1H", "pt1h", "P-1D", "PT1.S", " PT1H", "P99999999999999999999D"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestGetTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil)
		if _, err := GetTime(c); !errors.Is(err, ErrUnavailable) || err.Error() != "time service unavailable" {
			t.Fatalf("unarmed: %v", err)
		}
		c.Arm(t0.Add(500*time.Millisecond), 1)
		time.Sleep(1700 * time.Millisecond)
		r, err := GetTime(c)
		if err != nil || r.CurrentTime != "2026-03-01T09:00:02Z" {
			t.Fatalf("got %+v %v", r, err)
		}
	})
}

func TestRealInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil)
		st, _ := c.Arm(t0, 3600)
		at, ok := c.RealInstant(t0.Add(time.Hour))
		if !ok || at.Sub(st.Anchor) != time.Second {
			t.Fatalf("got %v %v", at.Sub(st.Anchor), ok)
		}
	})
}
