package domain_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// RFC 8785's own examples and the cases that differ from encoding/json.
func TestCanonicalJSON_RFC8785Examples(t *testing.T) {
	for in, want := range map[string]string{
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		` [ -0 , 1e21, 1e-7, 123456789012345678901234, 0.1 ] `: `[0,1e+21,1e-7,1.2345678901234569e+23,0.1]`,
		`{"a":"<&>\u2028"}`: `{"a":"<&>` + "\u2028" + `"}`,
		`{}`:                `{}`,
		`[[],{}]`:           `[[],{}]`,
	} {
		got, err := domain.CanonicalJSON([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", in, got, want)
		}
	}
	// RFC 8785 §3.2.3's sorting example, against the reference library.
	in := `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`
	got, err := domain.CanonicalJSON([]byte(in))
	want, _ := jcs.Transform([]byte(in))
	if err != nil || string(got) != string(want) || !strings.HasPrefix(string(got), `{"\r":"Carriage Return","1":"One"`) {
		t.Errorf("sorting example: %s (%v); want %s", got, err, want)
	}
}

func TestCanonicalJSON_RefusesWhatJCSCannotRepresent(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"a":2}`, `"\ud800"`, `"\udc00x"`, `1e999`, `{"a":1`, `[1,]`, `01`, `"a` + "\x01" + `"`, "\"\xff\"", `{} x`, strings.Repeat("[", 200) + strings.Repeat("]", 200),
	} {
		if _, err := domain.CanonicalJSON([]byte(in)); !errors.Is(err, domain.ErrNotCanonicalizable) {
			t.Errorf("%q: err = %v; want ErrNotCanonicalizable", in, err)
		}
	}
}

// The chain hash covers the body and the previous hash, and nothing that a
// re-serialisation of the same JSON would change.
func TestEventHash_CoversBodyAndPrevOnly(t *testing.T) {
	e := domain.Event{ID: "event_1", TenantID: "tenant_1", Outcome: domain.OutcomeSuccess, OccurredAt: time.Date(2026, 6, 20, 0, 0, 0, 0, time.UTC)}
	body, _ := json.Marshal(e)
	h1, err := domain.EventHash(body, domain.ChainGenesis)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h1, "sha256:") || len(h1) != 71 {
		t.Fatalf("hash %q", h1)
	}
	var generic map[string]any
	_ = json.Unmarshal(body, &generic)
	pretty, _ := json.MarshalIndent(generic, "", "   ")
	if h2, _ := domain.EventHash(pretty, domain.ChainGenesis); h2 != h1 {
		t.Error("a re-serialisation of the same body changed the hash")
	}
	if h3, _ := domain.EventHash(body, h1); h3 == h1 {
		t.Error("prev_hash is not covered")
	}
	e.Outcome = domain.OutcomeFailed
	other, _ := json.Marshal(e)
	if h4, _ := domain.EventHash(other, domain.ChainGenesis); h4 == h1 {
		t.Error("body is not covered")
	}
	canon, _ := domain.CanonicalJSON(body)
	if domain.ChainHash(canon, "") != h1 {
		t.Error("ChainHash of the canonical form differs from EventHash")
	}
	if !domain.ChainHashMatches(canon, "", h1) || domain.ChainHashMatches(canon, h1, h1) || domain.ChainHashMatches(canon, "", h1[:70]) || domain.ChainHashMatches(canon, "", "sha512:"+h1[7:]) {
		t.Error("ChainHashMatches disagrees with ChainHash")
	}
}

func TestAppendES6Number(t *testing.T) {
	for f, want := range map[float64]string{0: "0", math.Copysign(0, -1): "0", 1: "1", -1.5: "-1.5", 1e21: "1e+21", 1e20: "100000000000000000000",
		1e-6: "0.000001", 1e-7: "1e-7", 84.123: "84.123", 5e-324: "5e-324", math.MaxFloat64: "1.7976931348623157e+308"} {
		if got := string(domain.AppendES6Number(nil, f)); got != want {
			t.Errorf("%v: %s; want %s", f, got, want)
		}
	}
}

// FuzzCanonicalJSON holds the fast canonicaliser to the reference RFC 8785
// library: whenever both accept an input they produce the same bytes, and
// the output is a fixed point.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `{"\u00e9":1,"e":2,"\ud83d\ude00":3,"\uffff":4}`, `[1.0,2.50,-0,1e-7,1E+2]`, `"\u0000\u001f\t"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := domain.CanonicalJSON(in)
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("output is not JSON: %s", got)
		}
		again, err := domain.CanonicalJSON(got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("not a fixed point: %s -> %s (%v)", got, again, err)
		}
		want, err := jcs.Transform(in)
		if err != nil {
			return // the reference refuses some inputs we accept (e.g. deep nesting)
		}
		if string(got) != string(want) {
			t.Fatalf("input %q:\n got %s\nwant %s", in, got, want)
		}
	})
}
