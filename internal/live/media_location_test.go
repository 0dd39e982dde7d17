package live_test

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/internal/ingest"
	"github.com/triunalabs/trovesnap/internal/ingest/locationtest"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// locationCase is one photo of the table with Go's answer: whether
// ingest.StripLocation changes it or cannot walk it.
type locationCase struct {
	name  string
	bytes []byte
	want  bool
}

func locationCases() []locationCase {
	var cases []locationCase
	add := func(name string, b []byte) {
		if b == nil {
			b = []byte{}
		}
		out, err := ingest.StripLocation(b)
		cases = append(cases, locationCase{name, b, err != nil || !bytes.Equal(out, b)})
	}
	for i, s := range locationtest.Seeds() {
		add(s.Name, s.Bytes)
		for k, m := range locationtest.Mutants(s.Bytes, 120, uint64(i)) {
			add(fmt.Sprintf("%s, mutant %d", s.Name, k), m)
		}
		// What trovesnap uploads: the stripped photo, and its mutants.
		if out, err := ingest.StripLocation(s.Bytes); err == nil && !bytes.Equal(out, s.Bytes) {
			add(s.Name+", stripped", out)
			for k, m := range locationtest.Mutants(out, 20, uint64(i)+1000) {
				add(fmt.Sprintf("%s, stripped, mutant %d", s.Name, k), m)
			}
		}
	}
	for _, s := range locationtest.Limits() {
		add(s.Name, s.Bytes)
	}
	return cases
}

// mediaLocation asks the database about each photo in one query.
func mediaLocation(t testing.TB, conn *pgx.Conn, photos [][]byte) []bool {
	t.Helper()
	rows, err := conn.Query(ctx, `SELECT trovesnap.media_location(x) FROM unnest($1::bytea[]) WITH ORDINALITY AS u(x, o) ORDER BY o`, photos)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(photos) {
		t.Fatalf("%d answers for %d photos", len(got), len(photos))
	}
	return got
}

// The database's location check (migration media_location) answers as
// ingest.StripLocation does, for one table of photos: clean ones of each
// format, location in every place StripLocation looks, containers it cannot
// walk, what it outputs, and mutations of each. A photo trovesnap uploaded
// is accepted; one still carrying location is refused, whoever sends it.
func TestMediaLocation_AgreesWithStripLocation(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cases := locationCases()
	photos := make([][]byte, len(cases))
	for i, c := range cases {
		photos[i] = c.bytes
	}
	got := mediaLocation(t, conn, photos)
	refused, wrong := 0, 0
	for i, c := range cases {
		if c.want {
			refused++
		}
		if got[i] != c.want {
			wrong++
			if wrong <= 20 {
				t.Errorf("%s (%d bytes): database %v, StripLocation %v", c.name, len(c.bytes), got[i], c.want)
			}
		}
	}
	if wrong > 20 {
		t.Errorf("… %d disagreements in all", wrong)
	}
	// Both answers are well represented, so agreement means something; and
	// each format's photos at the walk's bound are on both sides of it.
	if refused < len(cases)/5 || len(cases)-refused < len(cases)/5 {
		t.Fatalf("the table is lopsided: %d refused of %d", refused, len(cases))
	}
	sides := map[string]map[bool]bool{}
	for _, c := range cases {
		if format, _, ok := strings.Cut(c.name, " steps "); ok {
			if sides[format] == nil {
				sides[format] = map[bool]bool{}
			}
			sides[format][c.want] = true
		}
	}
	for _, format := range []string{"jpeg", "png", "webp", "gif"} {
		if len(sides[format]) != 2 {
			t.Errorf("%s: the photos at the walk's bound are all on one side of it (%v)", format, sides[format])
		}
	}
	t.Logf("%d photos, %d carrying location or not walkable", len(cases), refused)
}

// A camera-sized JPEG (noise, so the entropy-coded data is megabytes with
// stuffed bytes throughout), with and without location in front.
func bigJPEG(b testing.TB) []byte {
	b.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	img := image.NewRGBA(image.Rect(0, 0, 2000, 1500))
	for i := range img.Pix {
		img.Pix[i] = byte(r.IntN(256))
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 92}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// worstPhotos are inputs built to make the walk work hardest, each at the
// photo size bound: entropy-coded data that is all stuffed bytes, a run of
// fill bytes, extraneous bytes before the first marker, and the most chunks
// a PNG may have.
func worstPhotos(b testing.TB, photo []byte) map[string][]byte {
	b.Helper()
	const size = 8 << 20
	sos := bytes.Index(photo, []byte{0xFF, 0xDA})
	head := photo[:sos+2+int(photo[sos+2])<<8|int(photo[sos+3])]
	fill := func(pattern []byte) []byte {
		out := append([]byte{}, head...)
		for len(out) < size-2-len(pattern) {
			out = append(out, pattern...)
		}
		return append(out, 0xFF, 0xD9)
	}
	extraneous := append(append([]byte{0xFF, 0xD8}, make([]byte, size-len(photo))...), photo[2:]...)
	var chunks []byte
	for range 65530 {
		chunks = append(chunks, 0, 0, 0, 0, 't', 'e', 'S', 'T', 0, 0, 0, 0)
	}
	png := locationtest.Seeds()
	var p []byte
	for _, s := range png {
		if s.Name == "png clean" {
			p = append(append(append([]byte{}, s.Bytes[:33]...), chunks...), s.Bytes[33:]...)
		}
	}
	return map[string][]byte{
		"stuffed": fill([]byte{0xFF, 0x00}), "fill": fill([]byte{0xFF}), "extraneous": extraneous, "png-chunks": p,
	}
}

// BenchmarkMediaLocation measures the check on a camera-sized JPEG, and on
// the worst inputs, each against its floor in the same run: the same bytes
// sent and their length taken.
func BenchmarkMediaLocation(b *testing.B) {
	env := pgtest.Need(b)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	photo := bigJPEG(b)
	b.Logf("photo: %d bytes", len(photo))
	inputs := worstPhotos(b, photo)
	inputs["photo"] = photo
	for _, name := range []string{"photo", "stuffed", "fill", "extraneous", "png-chunks"} {
		in := inputs[name]
		out, err := ingest.StripLocation(in)
		want := err != nil || !bytes.Equal(out, in)
		b.Run(name+"/floor", func(b *testing.B) {
			for b.Loop() {
				var n int
				if err := conn.QueryRow(ctx, `SELECT length($1::bytea)`, in).Scan(&n); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/check", func(b *testing.B) {
			for b.Loop() {
				if got := mediaLocation(b, conn, [][]byte{in}); got[0] != want {
					b.Fatalf("database %v, StripLocation %v", got[0], want)
				}
			}
		})
	}
}
