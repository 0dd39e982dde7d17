package domain

import (
	"errors"
	"math"
	"testing"
)

// Limits.Validate is the one check every Backend's SetLimits makes: no
// negative value, and a paid budget that is a finite amount (a NaN budget
// compares false with every cost, so it refused nothing).
func TestLimits_Validate(t *testing.T) {
	with := func(f func(*Limits)) Limits { l := DefaultLimits(); f(&l); return l }
	cases := []struct {
		name string
		l    Limits
		ok   bool
	}{
		{"the defaults", DefaultLimits(), true},
		{"all zero", Limits{}, true},
		{"a paid budget of $2.50", with(func(l *Limits) { l.MaxDailyPaidCostUSD = 2.5 }), true},
		{"a negative paid budget", with(func(l *Limits) { l.MaxDailyPaidCostUSD = -0.01 }), false},
		{"a NaN paid budget", with(func(l *Limits) { l.MaxDailyPaidCostUSD = math.NaN() }), false},
		{"an infinite paid budget", with(func(l *Limits) { l.MaxDailyPaidCostUSD = math.Inf(1) }), false},
		{"a paid budget of -Inf", with(func(l *Limits) { l.MaxDailyPaidCostUSD = math.Inf(-1) }), false},
		{"negative reads", with(func(l *Limits) { l.ReadsPerMinute = -1 }), false},
		{"negative candidate writes", with(func(l *Limits) { l.CandidateWritesPerMinute = -1 }), false},
		{"negative proposals", with(func(l *Limits) { l.ProposalsPerMinute = -1 }), false},
		{"negative controlled actions", with(func(l *Limits) { l.ControlledActionsPerMinute = -1 }), false},
		{"negative bulk targets", with(func(l *Limits) { l.MaxBulkTargets = -1 }), false},
		{"a negative rejected budget", with(func(l *Limits) { l.RejectedPerMinute = -1 }), false},
		{"a negative candidate quota", with(func(l *Limits) { l.MaxOpenCandidates = -1 }), false},
		{"a negative bytes quota", with(func(l *Limits) { l.MaxCandidateBytes = -1 }), false},
	}
	for _, c := range cases {
		err := c.l.Validate()
		if c.ok && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		var ie *InputError
		if !c.ok && (!errors.Is(err, ErrInvalidInput) || !errors.As(err, &ie) || ie.Field != "limits") {
			t.Errorf("%s: %v, want invalid_input on limits", c.name, err)
		}
	}
}

func TestValidUSD(t *testing.T) {
	for v, want := range map[float64]bool{0: true, 0.01: true, 1e9: true, -0.01: false, -500: false,
		math.Inf(1): false, math.Inf(-1): false} {
		if got := ValidUSD(v); got != want {
			t.Errorf("ValidUSD(%v) = %v", v, got)
		}
	}
	if ValidUSD(math.NaN()) {
		t.Error("ValidUSD(NaN) = true")
	}
}
