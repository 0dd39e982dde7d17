package tui

import (
	"context"
	"errors"
	"io"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// Run shows the terminal on in/out until the seller quits. The caller
// must have checked that both are an interactive terminal: approvals come
// from a person at a keyboard, and the terminal writes nowhere else.
func Run(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // quitting abandons any command still waiting on the database
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out)}
	if opts.NoColor {
		// The styles already carry no colour; the profile also strips any
		// a component might add.
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	}
	_, err := tea.NewProgram(New(ctx, opts), popts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return context.Canceled
	}
	if errors.Is(err, tea.ErrInterrupted) {
		return context.Canceled
	}
	return err
}
