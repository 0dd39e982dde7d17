package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestLimits_RaisesComparesEffectiveValues(t *testing.T) {
	base := DefaultLimits()
	with := func(f func(*Limits)) Limits { l := base; f(&l); return l }
	cases := []struct {
		name      string
		cur, next Limits
		want      []string
	}{
		{"same", base, base, nil},
		{"lowering is not a raise", base, with(func(l *Limits) { l.ReadsPerMinute = 1; l.MaxCandidateBytes = 1 }), nil},
		{"a rate up", base, with(func(l *Limits) { l.ReadsPerMinute++ }), []string{"read_calls_per_minute"}},
		{"paid budget up from none", base, with(func(l *Limits) { l.MaxDailyPaidCostUSD = 0.5 }), []string{"maximum_daily_paid_cost_usd"}},
		{"two up, one down", base, with(func(l *Limits) { l.ProposalsPerMinute++; l.MaxBulkTargets++; l.ReadsPerMinute = 0 }),
			[]string{"proposals_per_minute", "maximum_bulk_targets"}},
		// 0 is the default for the rejected budget and the quota: from 5, a raise.
		{"rejected 5 to 0 raises to the default", with(func(l *Limits) { l.RejectedPerMinute = 5 }), with(func(l *Limits) { l.RejectedPerMinute = 0 }),
			[]string{"rejected_calls_per_minute"}},
		{"rejected 0 to the default is no change", with(func(l *Limits) { l.RejectedPerMinute = 0 }), base, nil},
		{"quota 1 to 0 raises to the default", with(func(l *Limits) { l.MaxOpenCandidates = 1; l.MaxCandidateBytes = 1 }),
			with(func(l *Limits) { l.MaxOpenCandidates = 0; l.MaxCandidateBytes = 0 }),
			[]string{"maximum_open_candidates", "maximum_candidate_bytes"}},
		{"rejected above the default down to 0 is a lowering", with(func(l *Limits) { l.RejectedPerMinute = 500 }),
			with(func(l *Limits) { l.RejectedPerMinute = 0 }), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.cur.Raises(c.next); !slices.Equal(got, c.want) {
				t.Errorf("Raises = %v, want %v", got, c.want)
			}
		})
	}
}

// TestLimits_RaisesListsEveryField raises each field of Limits in turn, found
// by reflection, and wants Raises to name exactly that field: a field added
// to Limits and not to Raises fails here.
func TestLimits_RaisesListsEveryField(t *testing.T) {
	typ := reflect.TypeOf(Limits{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		cur := DefaultLimits()
		next := cur
		v := reflect.ValueOf(&next).Elem().Field(i)
		switch v.Kind() {
		case reflect.Int, reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Float64:
			v.SetFloat(v.Float() + 1)
		default:
			t.Fatalf("Limits.%s is a %s: teach this test and Raises how to compare it", f.Name, v.Kind())
		}
		if got := cur.Raises(next); !slices.Equal(got, []string{name}) {
			t.Errorf("raising Limits.%s: Raises = %v, want [%s] (is the field listed in Raises?)", f.Name, got, name)
		}
	}
}

// A Connector printed, logged or encoded never shows its access token.
func TestConnector_NeverShowsItsToken(t *testing.T) {
	c := Connector{Subject: "user_90", ClientID: "chatgpt", Token: "eyJhbGciOiJFUzI1NiJ9.secret.sig"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "conn", c, "ptr", &c)
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, &c), logged.String(), string(js)} {
		if strings.Contains(out, "secret") || !strings.Contains(out, "chatgpt") {
			t.Errorf("printed %q", out)
		}
	}
}

// The rate bucket, read by the store's counter and the gate's memory of
// full windows alike: a client's own, or the one anonymous calls share.
func TestRateBucket_ClientOrPublic(t *testing.T) {
	for _, c := range []struct {
		p    Principal
		want string
	}{
		{Principal{Client: ClientRef{ID: "mcp_client_81"}}, "mcp_client_81"},
		{Principal{Public: true, Client: ClientRef{ID: "mcp_client_81"}}, "public"},
		{Principal{}, "public"},
	} {
		if got := RateBucket(c.p); got != c.want {
			t.Errorf("RateBucket(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
