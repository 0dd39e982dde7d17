package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// SaleCreateOptions are the options of `trovesnap sale create`.
type SaleCreateOptions struct {
	DB                                string
	Tenant                            string
	Name                              string
	Starts, Ends                      string
	City, Region, PostalCode, Address string
	PassphraseStdin, JSON             bool
}

// SaleListOptions are the options of `trovesnap sale list`.
type SaleListOptions struct {
	DB     string
	Tenant string
	As     string
	JSON   bool
}

func newSaleCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "sale", Short: "Create and list estate sales (seller-side; no MCP tool creates a sale)"}
	co := &SaleCreateOptions{}
	create := &cobra.Command{
		Use:   "create --name NAME --starts DATE --ends DATE",
		Short: "Create a sale: a private draft whose street address stays hidden until the seller sets a reveal",
		Long: "Create a sale: a private draft whose street address stays hidden until the seller sets a reveal.\n\n" +
			"Dates are YYYY-MM-DD (UTC; --ends then means the end of that day) or RFC 3339 times. In mock mode the\n" +
			"command acts as the data directory's passphrase owner and asks the passphrase; in live mode it acts as\n" +
			"the signed-in seller (`trovesnap login`). Either needs sale.create (owners, managers).\n\n" +
			"Every call creates a new sale: a retry after an error it did not report creates a second one. Check\n" +
			"with `trovesnap sale list` before retrying.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			co.DB = dbFlag(cmd)
			return saleCreateRun(cmd.Context(), f, co)
		},
	}
	fl := create.Flags()
	fl.StringVar(&co.Name, "name", "", "the sale's name, e.g. \"Maple Street Estate\" (required)")
	fl.StringVar(&co.Starts, "starts", "", "first day or instant, e.g. 2026-12-10 or 2026-12-10T09:00:00-08:00 (required)")
	fl.StringVar(&co.Ends, "ends", "", "last day or instant, not before --starts (required)")
	fl.StringVar(&co.Tenant, "tenant", "", "tenant id (mock mode: required; live mode: default the signed-in user's only tenant)")
	fl.StringVar(&co.City, "city", "", "city")
	fl.StringVar(&co.Region, "region", "", "region or state")
	fl.StringVar(&co.PostalCode, "postal-code", "", "postal code")
	fl.StringVar(&co.Address, "address", "", "street address (kept private: a new sale never shows it)")
	fl.BoolVar(&co.PassphraseStdin, "passphrase-stdin", false, "mock mode: read the seller's approval passphrase from the first line of standard input")
	fl.BoolVar(&co.JSON, "json", false, "print the sale as JSON")

	lo := &SaleListOptions{}
	list := &cobra.Command{
		Use:   "list",
		Short: "List a tenant's sales the member may see (a sale-scoped member: its assigned sales only)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			lo.DB = dbFlag(cmd)
			return saleListRun(cmd.Context(), f, lo)
		},
	}
	list.Flags().StringVar(&lo.Tenant, "tenant", "", "tenant id (mock mode: required; live mode: default the signed-in user's only tenant)")
	list.Flags().StringVar(&lo.As, "as", "", "mock mode only: the member listing (default: the passphrase's owner); live mode lists as the signed-in user")
	list.Flags().BoolVar(&lo.JSON, "json", false, "print JSON")
	cmd.AddCommand(create, list)
	return cmd
}

// parseSaleTime reads a --starts/--ends value: an RFC 3339 time, or a
// date in UTC — its start, or for an end its last second, so a sale
// "2026-12-10 to 2026-12-13" includes the whole last day.
func parseSaleTime(flag, v string, end bool) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, usageError{fmt.Errorf("%s is required", flag)}
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, usageError{fmt.Errorf("%s %q: want a date (2026-12-10) or an RFC 3339 time (2026-12-10T09:00:00Z)", flag, v)}
	}
	if end {
		d = d.Add(24*time.Hour - time.Second)
	}
	return d, nil
}

// newSaleFrom reads the create options into a domain.NewSale, checked as
// the store and the RPC check it, so a bad flag is refused before anything
// is opened or asked.
func newSaleFrom(o *SaleCreateOptions) (domain.NewSale, error) {
	if strings.TrimSpace(o.Name) == "" {
		return domain.NewSale{}, usageError{errors.New("--name is required")}
	}
	starts, err := parseSaleTime("--starts", o.Starts, false)
	if err != nil {
		return domain.NewSale{}, err
	}
	ends, err := parseSaleTime("--ends", o.Ends, true)
	if err != nil {
		return domain.NewSale{}, err
	}
	in := domain.NewSale{TenantID: o.Tenant, Name: o.Name, City: o.City, Region: o.Region, PostalCode: o.PostalCode,
		StreetAddress: o.Address, StartsAt: starts, EndsAt: ends}.Clean()
	if err := domain.ValidateNewSale(in); err != nil {
		return domain.NewSale{}, saleError(err)
	}
	return in, nil
}

// saleFlags names the flag of each field a sale refusal may name.
var saleFlags = map[string]string{"name": "--name", "starts_at": "--starts", "ends_at": "--ends", "city": "--city",
	"region": "--region", "postal_code": "--postal-code", "street_address": "--address", "tenant_id": "--tenant"}

// saleError says which flag a refusal is about and what the seller may
// do; refusals are usage errors (exit 2).
func saleError(err error) error {
	var ie *domain.InputError
	switch {
	case errors.As(err, &ie):
		flag := saleFlags[ie.Field]
		if flag == "" {
			flag = ie.Field
		}
		return usageError{fmt.Errorf("%s: %s", flag, ie.Reason)}
	case errors.Is(err, domain.ErrSaleAssignment):
		return usageError{fmt.Errorf("%w: a sale-scoped member works only in its assigned sales and creates none", err)}
	case errors.Is(err, domain.ErrPermissionDenied):
		return usageError{fmt.Errorf("%w (creating a sale needs %s in the tenant, listing %s; a member of another tenant is refused alike)",
			err, domain.PermSaleCreate, domain.PermSaleRead)}
	case errors.Is(err, domain.ErrAuthRequired):
		return fmt.Errorf("%w: sign in again with `trovesnap login`", err)
	}
	return err
}

// withSaleAdmin runs fn with the sale surface of the configured mode: the
// embedded store in mock mode, the signed-in seller in live mode. With a
// gate, the agent-shell tripwire comes first in both modes, and in mock
// mode the passphrase, whose owner is the actor (live mode: the JWT's
// user, so owner is "").
func withSaleAdmin(ctx context.Context, f *Factory, db string, gate *sellerGate, fn func(cfg config.Config, a domain.SaleAdmin, owner string) error) error {
	cfg, err := f.Config(db)
	if err != nil {
		return err
	}
	if cfg.Mode != domain.ModeLive {
		return withConfiguredStore(ctx, f, cfg, func(cfg config.Config, st *store.Store) error {
			var owner string
			if gate != nil {
				if owner, err = authorize(ctx, f, cfg, st, *gate); err != nil {
					return err
				}
			}
			return fn(cfg, st, owner)
		})
	}
	if gate != nil {
		if err := refuseAgentShell(ctx, f, cfg, nil, *gate); err != nil {
			return err
		}
	}
	s, err := f.OpenSeller(ctx, cfg)
	if err != nil {
		return err
	}
	return fn(cfg, s, "")
}

func saleCreateRun(ctx context.Context, f *Factory, o *SaleCreateOptions) error {
	in, err := newSaleFrom(o)
	if err != nil {
		return err
	}
	cfg, err := f.Config(o.DB)
	if err != nil {
		return err
	}
	if cfg.Mode != domain.ModeLive && in.TenantID == "" { // said before the passphrase is asked
		return usageError{errors.New("--tenant is required")}
	}
	gate := &sellerGate{Command: "sale create", Tenant: o.Tenant, Stdin: o.PassphraseStdin}
	return withSaleAdmin(ctx, f, o.DB, gate, func(_ config.Config, a domain.SaleAdmin, owner string) error {
		in.ActorID = owner
		sl, err := a.CreateSale(ctx, in)
		if err != nil {
			return saleError(err)
		}
		if o.JSON {
			return writeJSON(f.IO.Out, sl)
		}
		_, err = fmt.Fprintf(f.IO.Out, "created %s %q (%s, %s) in %s, %s → %s\n", sl.ID, sl.Title, sl.Status, sl.Visibility,
			sl.TenantID, sl.StartsAt.Format(time.RFC3339), sl.EndsAt.Format(time.RFC3339))
		return err
	})
}

func saleListRun(ctx context.Context, f *Factory, o *SaleListOptions) error {
	return withSaleAdmin(ctx, f, o.DB, nil, func(cfg config.Config, a domain.SaleAdmin, _ string) error {
		as := o.As
		if cfg.Mode != domain.ModeLive {
			if o.Tenant == "" {
				return usageError{errors.New("--tenant is required")}
			}
			if as == "" {
				st, _ := a.(*store.Store)
				info, err := st.PassphraseStatus(ctx)
				if err != nil {
					return err
				}
				if as = info.Owner; as == "" {
					return usageError{errors.New("--as USER is required (no passphrase is set in this data directory to say who you are)")}
				}
			}
		} else if as != "" {
			return usageError{fmt.Errorf("--as %s: in live mode you act as the signed-in user; sign in as another user with `trovesnap login`", as)}
		}
		sales, err := a.ListSalesAs(ctx, o.Tenant, as)
		if err != nil {
			return saleError(err)
		}
		if o.JSON {
			return writeJSON(f.IO.Out, sales)
		}
		tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tSTARTS\tENDS\tCITY")
		for _, s := range sales {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Title, s.Status, s.StartsAt.Format(time.RFC3339),
				s.EndsAt.Format(time.RFC3339), s.City)
		}
		return tw.Flush()
	})
}
