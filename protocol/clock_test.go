package protocol

import (
	"encoding/json"
	"testing"
)

func TestClockStateEncoding(t *testing.T) {
	r := Float(3600)
	cases := []struct {
		v    any
		want string
	}{
		{ClockState{Armed: false}, `{"armed":false}`},
		{ClockState{Armed: true, T0: "2026-03-01T09:00:00Z", Rate: &r, VirtualTime: "2026-03-01T09:00:00Z"},
			`{"armed":true,"t0":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":3600.0,"virtual_time":"2026-03-01T09:00:00Z"}`},
		{ClockCleared{OK: true}, `{"ok":true,"armed":false}`},
		{ControlError{Error: "clock not armed"}, `{"ok":false,"error":"clock not armed"}`},
		{GetTimeResult{CurrentTime: "2026-03-01T09:00:00Z"}, `{"current_time":"2026-03-01T09:00:00Z"}`},
		{[]Float{0, 0.5, 1e20, -2, 86400}, `[0.0,0.5,100000000000000000000,-2.0,86400.0]`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("got %s %v want %s", b, err, c.want)
		}
	}
	var st ClockState
	if err := json.Unmarshal([]byte(`{"armed":true,"t0":"x","virtual_seconds_per_real_second":2,"virtual_time":"y","env_get_time_url":"http://gateway:18765/clock/time"}`), &st); err != nil || float64(*st.Rate) != 2 || st.EnvGetTimeURL == "" {
		t.Fatalf("%+v %v", st, err)
	}
}
