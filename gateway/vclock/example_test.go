package vclock_test

import (
	"fmt"

	"github.com/agentenv/agentenv/gateway/vclock"
)

func ExampleVirtual() {
	clk := vclock.New(nil)
	unsubscribe := clk.Subscribe(func(s vclock.State) {
		fmt.Println("armed:", s.Armed, "generation:", s.Generation) // add/remove get_time here
	})
	defer unsubscribe()

	t0, _ := vclock.ParseTime("virtual_time", "2026-03-01 10:30:00.5+01:30")
	clk.Arm(t0, 0) // rate 0: frozen
	now, _ := clk.Now()
	fmt.Println(vclock.FormatTime(now))
	res, _ := vclock.GetTime(clk)
	fmt.Println(res.CurrentTime)

	d, _ := vclock.ParseDuration("P1DT6H")
	fmt.Println(vclock.FormatTime(vclock.Advance(now, d)))
	clk.Clear()
	_, err := vclock.GetTime(clk)
	fmt.Println(err)
	// Output:
	// armed: true generation: 1
	// 2026-03-01T09:00:00.500000Z
	// 2026-03-01T09:00:00Z
	// 2026-03-02T15:00:00.500000Z
	// armed: false generation: 2
	// time service unavailable
}
