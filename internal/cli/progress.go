package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"charm.land/bubbles/v2/progress"
	"github.com/charmbracelet/x/term"
)

// progressBar draws the progress of long local work (`media add`, `import
// csv`) on stderr when stderr is a terminal, with the Charm progress bubble
// rendered in place (no Bubble Tea program: stdin stays untouched and stdout
// carries the result only). On anything else it draws nothing. A nil
// *progressBar is valid and draws nothing.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	bar   progress.Model
	last  time.Time
	drawn bool
}

// progressRedraw bounds how often the bar is redrawn.
const progressRedraw = 100 * time.Millisecond

// newProgressBar returns a bar on errOut when it is a terminal, else nil.
func newProgressBar(errOut io.Writer) *progressBar {
	f, ok := errOut.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(f.Fd()) {
		return nil
	}
	return newProgressBarOn(errOut)
}

func newProgressBarOn(w io.Writer) *progressBar {
	return &progressBar{w: w, bar: progress.New(progress.WithWidth(30), progress.WithDefaultBlend())}
}

// set shows done of total with a label ("photos", "rows imported"); it
// redraws at most every progressRedraw, and always at the end.
func (p *progressBar) set(done, total int, label string) {
	if p == nil || total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if done < total && now.Sub(p.last) < progressRedraw {
		return
	}
	p.last = now
	pct := min(float64(done)/float64(total), 1)
	fmt.Fprintf(p.w, "\r\x1b[2K%s %d/%d %s", p.bar.ViewAs(pct), done, total, label)
	p.drawn = true
}

// done clears the bar's line, so what follows starts on a clean line.
func (p *progressBar) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[2K")
		p.drawn = false
	}
}

// println writes a line above the bar (a warning while the bar runs).
func (p *progressBar) println(w io.Writer, format string, a ...any) {
	if p != nil {
		p.mu.Lock()
		if p.drawn {
			fmt.Fprint(p.w, "\r\x1b[2K")
			p.drawn = false
			p.last = time.Time{}
		}
		p.mu.Unlock()
	}
	fmt.Fprintf(w, format+"\n", a...)
}
