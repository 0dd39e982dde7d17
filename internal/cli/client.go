package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/setup"
	"github.com/triunalabs/trovesnap/store"
)

// RegisterOptions are the options of `trovesnap client register`.
type RegisterOptions struct {
	Name, Type, Tenant, Actor, CreatedBy string
	Groups                               []string
	Trust, RiskClass                     string
	Portable, JSON                       bool
	Out                                  string
	// RemoteURL adds the previews of a remote server (mcp serve --http).
	RemoteURL string
	// OAuth registers a connector client bound to the OAuth client
	// OAuthClientID, for the server at RemoteURL: reached only through that
	// OAuth client's access tokens, so no token is printed.
	OAuth         bool
	OAuthClientID string
	// PassphraseStdin reads the seller's approval passphrase from stdin.
	PassphraseStdin bool
	DB              string
}

func newClientCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "client", Short: "Register and govern MCP clients (seller-side; no MCP tool can do this)"}
	cmd.AddCommand(newClientRegisterCmd(f), newClientListCmd(f), newClientShowCmd(f), newClientPreviewCmd(f), newClientRotateCmd(f))
	for _, st := range []struct{ use, short, status string }{
		{"suspend ID", "Suspend a client: its next call is refused (client_suspended) and it sees no tools", domain.ClientSuspended},
		{"reactivate ID", "Reactivate a suspended client", domain.ClientActive},
		{"revoke ID", "Revoke a client for good: its credential stops working and cannot be restored", domain.ClientRevoked},
	} {
		cmd.AddCommand(newClientStatusCmd(f, st.use, st.short, st.status))
	}
	return cmd
}

// withClientAdmin runs fn with the client administration surface of the
// configured mode: in mock mode the embedded store; in live mode the
// signed-in seller's session (`trovesnap login`), under which the project's
// seller RPCs and row level security decide what the user may see and do —
// the local file holds no clients there, and no key of this process acts.
func withClientAdmin(ctx context.Context, f *Factory, db string, fn func(cfg config.Config, a domain.ClientAdmin) error) error {
	cfg, err := f.Config(db)
	if err != nil {
		return err
	}
	if cfg.Mode == domain.ModeLive {
		s, err := f.OpenSeller(ctx, cfg)
		if err != nil {
			return err
		}
		return fn(cfg, s)
	}
	return withConfiguredStore(ctx, f, cfg, func(cfg config.Config, st *store.Store) error { return fn(cfg, st) })
}

// withGatedClientAdmin is withClientAdmin for a command that grants or
// widens authority: the agent-shell tripwire and the seller's passphrase
// come first (the passphrase is the local store's, in live mode too).
// owner is the passphrase's owner in mock mode, "" in live mode.
func withGatedClientAdmin(ctx context.Context, f *Factory, db string, g sellerGate, fn func(cfg config.Config, a domain.ClientAdmin, owner string) error) error {
	return withClientAdmin(ctx, f, db, func(cfg config.Config, a domain.ClientAdmin) error {
		owner, err := authorizeFor(ctx, f, cfg, a, g)
		if err != nil {
			return err
		}
		return fn(cfg, a, owner)
	})
}

// authorizeFor runs authorize on the store behind a (mock mode), or on
// the local store (live mode, where a is the signed-in seller).
func authorizeFor(ctx context.Context, f *Factory, cfg config.Config, a any, g sellerGate) (string, error) {
	st, _ := a.(*store.Store)
	return authorize(ctx, f, cfg, st, g)
}

// withStore is how a command opens the local store: it resolves the
// configuration with db (the --db flag), opens the store, runs fn and
// closes it. Commands never call f.OpenStore themselves, so every one opens
// the store the same way and closes it on every path.
func withStore(ctx context.Context, f *Factory, db string, fn func(cfg config.Config, st *store.Store) error) error {
	cfg, err := f.Config(db)
	if err != nil {
		return err
	}
	return withConfiguredStore(ctx, f, cfg, fn)
}

// withConfiguredStore is withStore for a command that must look at the
// configuration before anything is opened (a mode check, a live branch):
// opening creates the database file, so a refusal comes first.
func withConfiguredStore(ctx context.Context, f *Factory, cfg config.Config, fn func(cfg config.Config, st *store.Store) error) error {
	st, err := f.OpenStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(cfg, st)
}

func newClientRegisterCmd(f *Factory) *cobra.Command {
	o := &RegisterOptions{}
	cmd := &cobra.Command{
		Use:   "register",
		Short: "Register a client for a member of a tenant and print its one-time token and host setup",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return clientRegisterRun(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Name, "name", "", "a name the seller recognises, e.g. \"Paul's Claude Code\"")
	fl.StringVar(&o.Type, "type", "", "client type: "+strings.Join(domain.ClientTypes, ", "))
	fl.StringVar(&o.Tenant, "tenant", "", "tenant id, e.g. tenant_123")
	fl.StringVar(&o.Actor, "actor", "", "the member the client acts for, e.g. user_88")
	fl.StringSliceVar(&o.Groups, "groups", nil, "allowed tool groups: "+strings.Join(domain.ToolGroups, ", "))
	fl.StringVar(&o.CreatedBy, "created-by", "", "the member registering it: the passphrase's owner (mock mode) or the signed-in user (live mode), the default and the only one it may name")
	fl.BoolVar(&o.PassphraseStdin, "passphrase-stdin", false, "read the seller's approval passphrase from the first line of standard input (for provisioning scripts)")
	fl.StringVar(&o.Trust, "trust", "", "trust level: "+strings.Join(domain.TrustLevels, ", "))
	fl.StringVar(&o.RiskClass, "risk-class", "", "risk class: "+strings.Join(domain.RiskClasses, ", "))
	fl.BoolVar(&o.Portable, "portable", false, "previews run bare `trovesnap` from PATH instead of this binary's absolute path")
	fl.StringVar(&o.RemoteURL, "remote-url", "", remoteURLUsage)
	fl.BoolVar(&o.OAuth, "oauth", false, "a connector (ChatGPT, Claude) that signs in as the actor through OAuth: needs --oauth-client-id and --remote-url; no token is issued to paste")
	fl.StringVar(&o.OAuthClientID, "oauth-client-id", "", "the OAuth client id the project's authorization server gave the connector (implies --oauth)")
	fl.BoolVar(&o.JSON, "json", false, "print one JSON object (client_id, token, client, previews)")
	fl.StringVar(&o.Out, "out", "", "write the setup previews (with the token) to this new file instead of printing them")
	return cmd
}

func clientRegisterRun(ctx context.Context, f *Factory, o *RegisterOptions) error {
	for flag, v := range map[string]string{"--name": o.Name, "--type": o.Type, "--tenant": o.Tenant, "--actor": o.Actor} {
		if v == "" {
			return usageError{fmt.Errorf("%s is required", flag)}
		}
	}
	if len(o.Groups) == 0 {
		return usageError{errors.New("--groups is required (e.g. tenant_read,candidate_write)")}
	}
	if o.OAuthClientID != "" {
		o.OAuth = true
	}
	if o.OAuth && (o.OAuthClientID == "" || o.RemoteURL == "") {
		return usageError{errors.New("--oauth needs --oauth-client-id (the connector's OAuth client) and --remote-url (the server its tokens name)")}
	}
	g := sellerGate{Command: "client register", Tenant: o.Tenant, Stdin: o.PassphraseStdin, Claims: []claim{{"--created-by", o.CreatedBy}}}
	return withGatedClientAdmin(ctx, f, o.DB, g, func(cfg config.Config, a domain.ClientAdmin, owner string) error {
		if o.CreatedBy == "" {
			o.CreatedBy = owner // mock mode: the passphrase's owner registers it
		}
		return registerClient(ctx, f, cfg, a, o)
	})
}

// RegisterOutput is the --json output of `client register`.
type RegisterOutput struct {
	ClientID string          `json:"client_id"`
	Token    string          `json:"token,omitempty"` // none for a connector (--oauth)
	Client   domain.Client   `json:"client"`
	Previews []setup.Preview `json:"previews"`
	// PreviewsFile is where --out wrote the previews too.
	PreviewsFile string `json:"previews_file,omitempty"`
}

// registerClient registers the client through a and prints its token and
// host setup.
func registerClient(ctx context.Context, f *Factory, cfg config.Config, a domain.ClientAdmin, o *RegisterOptions) error {
	if o.Out != "" {
		if err := checkOutPath(o.Out); err != nil {
			return err // before registering: a refused --out registers nothing
		}
	}
	in := domain.NewClient{
		TenantID: o.Tenant, ActorID: o.Actor, Name: o.Name, ClientType: o.Type, Groups: o.Groups,
		CreatedBy: o.CreatedBy, TrustLevel: o.Trust, RiskClass: o.RiskClass,
	}
	if o.OAuth {
		resource, err := setup.RemoteEndpoint(o.RemoteURL)
		if err != nil {
			return usageError{fmt.Errorf("--remote-url: %w", err)}
		}
		in.OAuthClientID, in.OAuthResource = o.OAuthClientID, resource
	}
	c, token, err := a.RegisterClient(ctx, in)
	if err != nil {
		return clientError(err)
	}
	if o.OAuth {
		token = "" // a connector signs in: its client token is never shown
	}
	previews, err := previewsFor(f, cfg, c.ID, token, o.Portable, o.RemoteURL, o.OAuthClientID)
	if err != nil {
		return err
	}
	if o.Out != "" {
		if err := writePreviewFile(o.Out, previews); err != nil {
			return err
		}
	}
	if o.JSON {
		return writeJSON(f.IO.Out, RegisterOutput{ClientID: c.ID, Token: token, Client: c, Previews: previews, PreviewsFile: o.Out})
	}
	w := f.IO.Out
	fmt.Fprintf(w, "Registered %s %q (%s) for %s in %s, groups %s.\n", c.ID, c.Name, c.ClientType, c.ActorID, c.TenantID, strings.Join(c.AllowedToolGroups, ","))
	if o.OAuth {
		fmt.Fprintf(w, "Bound to the OAuth client %s for %s: the connector signs in as %s; no token to paste.\n", c.OAuthClientID, in.OAuthResource, c.ActorID)
	} else {
		fmt.Fprintf(w, "Token (shown once; trovesnap keeps only its hash): %s\n", token)
	}
	if o.Out != "" {
		fmt.Fprintf(w, "Setup previews written to %s (mode 0600; it contains the token).\n", o.Out)
		return liveHostNote(w, cfg)
	}
	fmt.Fprintln(w)
	if err := printPreviews(w, previews); err != nil {
		return err
	}
	return liveHostNote(w, cfg)
}

// liveHostNote reminds a live-mode seller that the host's server needs the
// project's settings too; it names the variables, never their values.
func liveHostNote(w io.Writer, cfg config.Config) error {
	if cfg.Mode != domain.ModeLive {
		return nil
	}
	_, err := fmt.Fprintf(w, "Live mode: the previews carry %s, %s (the project's public key) and this client's token — the only secret the host holds. No host needs a server key.\n",
		config.EnvSupabaseURL, config.EnvSupabaseAPIKey)
	return err
}

// remoteURLUsage is the --remote-url flag's help.
const remoteURLUsage = "also print the setup of hosts reaching a `trovesnap mcp serve --http` server at this URL (https://mcp.example.com)"

// previewsFor builds the host setup previews from the one pure function.
func previewsFor(f *Factory, cfg config.Config, clientID, token string, portable bool, remoteURL, oauthClientID string) ([]setup.Preview, error) {
	in := setup.Input{ServerName: "trovesnap", Portable: portable, Token: token, ClientID: clientID, DataDir: cfg.DataDir, RemoteURL: remoteURL,
		OAuthClientID: oauthClientID}
	if !portable {
		exe, err := f.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding this binary's path (use --portable to print bare `trovesnap`): %w", err)
		}
		in.Executable = exe
	}
	if cfg.DBPathSource != "default" {
		in.DBPath = cfg.DBPath // the host's server must open the same database
	}
	if cfg.Mode == domain.ModeLive {
		in.SupabaseURL, in.SupabasePublicKey = cfg.SupabaseURL, cfg.SupabaseAPIKey() // both public
	}
	return setup.Previews(in)
}

func printPreviews(w io.Writer, previews []setup.Preview) error {
	for _, p := range previews {
		fmt.Fprintf(w, "── %s ──\n%s\n", p.Title, strings.TrimRight(p.Text, "\n"))
		if p.Note != "" {
			fmt.Fprintf(w, "(%s)\n", p.Note)
		}
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
	}
	return nil
}

// hostSettingsFiles are files hosts read their own settings from: previews
// are for the user to paste, never written into a host's settings.
var hostSettingsFiles = []string{".mcp.json", "claude_desktop_config.json", "config.toml", ".claude.json", "settings.json", "settings.local.json"}

func checkOutPath(path string) error {
	if slices.Contains(hostSettingsFiles, filepath.Base(path)) {
		return usageError{fmt.Errorf("--out %s looks like a host's own settings file: trovesnap never writes host settings; name another file and paste from it", path)}
	}
	if _, err := os.Lstat(path); err == nil {
		return usageError{fmt.Errorf("--out %s already exists: name a new file", path)}
	}
	return nil
}

func writePreviewFile(path string, previews []setup.Preview) error {
	if err := checkOutPath(path); err != nil {
		return err
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--out: %w (the file must not exist yet)", err)
	}
	if err := printPreviews(fh, previews); err != nil {
		_ = fh.Close()
		return err
	}
	return fh.Close()
}

// ClientPreviewOptions are the options of `client preview`.
type ClientPreviewOptions struct {
	DB        string
	ID        string
	Portable  bool
	JSON      bool
	RemoteURL string
}

func newClientPreviewCmd(f *Factory) *cobra.Command {
	o := &ClientPreviewOptions{}
	cmd := &cobra.Command{
		Use:   "preview ID",
		Short: "Print a client's host setup again, without the secret (paste the token you saved)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			o.DB = dbFlag(cmd)
			o.ID = a[0]
			return clientPreviewRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.Portable, "portable", false, "use bare `trovesnap` from PATH")
	cmd.Flags().StringVar(&o.RemoteURL, "remote-url", "", remoteURLUsage)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func clientPreviewRun(ctx context.Context, f *Factory, o *ClientPreviewOptions) error {
	return withClientAdmin(ctx, f, o.DB, func(cfg config.Config, ca domain.ClientAdmin) error {
		c, err := ca.GetClient(ctx, o.ID)
		if err != nil {
			return clientError(err)
		}
		previews, err := previewsFor(f, cfg, c.ID, "", o.Portable, o.RemoteURL, c.OAuthClientID)
		if err != nil {
			return err
		}
		if o.JSON {
			return writeJSON(f.IO.Out, previews)
		}
		return printPreviews(f.IO.Out, previews)
	})
}

// ClientListOptions are the options of `client list`.
type ClientListOptions struct {
	DB     string
	Tenant string
	JSON   bool
}

func newClientListCmd(f *Factory) *cobra.Command {
	o := &ClientListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List registered clients",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return clientListRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().StringVar(&o.Tenant, "tenant", "", "only clients of this tenant (live mode: default every tenant you are a member of)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func clientListRun(ctx context.Context, f *Factory, o *ClientListOptions) error {
	return withClientAdmin(ctx, f, o.DB, func(_ config.Config, ca domain.ClientAdmin) error {
		cs, err := ca.ListClients(ctx, o.Tenant)
		if err != nil {
			return clientError(err)
		}
		if o.JSON {
			return writeJSON(f.IO.Out, cs)
		}
		tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTYPE\tSTATUS\tTENANT\tACTOR\tGROUPS\tLAST SEEN")
		for _, c := range cs {
			seen := "never"
			if c.LastSeenAt != nil {
				seen = c.LastSeenAt.Format("2006-01-02 15:04")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.ClientType, c.Status, c.TenantID, c.ActorID, strings.Join(c.AllowedToolGroups, ","), seen)
		}
		return tw.Flush()
	})
}

// ClientDetail is the --json output of `client show`.
type ClientDetail struct {
	domain.Client
	Limits domain.Limits `json:"limits"`
}

// ClientShowOptions are the options of `client show`.
type ClientShowOptions struct {
	DB   string
	ID   string
	JSON bool
}

func newClientShowCmd(f *Factory) *cobra.Command {
	o := &ClientShowOptions{}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a client, its status, groups and effective limits",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			o.DB = dbFlag(cmd)
			o.ID = a[0]
			return clientShowRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func clientShowRun(ctx context.Context, f *Factory, o *ClientShowOptions) error {
	return withClientAdmin(ctx, f, o.DB, func(_ config.Config, ca domain.ClientAdmin) error {
		c, err := ca.GetClient(ctx, o.ID)
		if err != nil {
			return clientError(err)
		}
		l, err := ca.EffectiveLimits(ctx, c.TenantID, c.ID)
		if err != nil {
			return clientError(err)
		}
		if o.JSON {
			return writeJSON(f.IO.Out, ClientDetail{Client: c, Limits: l})
		}
		w := f.IO.Out
		fmt.Fprintf(w, "%s %q\n  type %s · status %s · trust %s · risk %s\n", c.ID, c.Name, c.ClientType, c.Status, c.TrustLevel, c.RiskClass)
		fmt.Fprintf(w, "  tenant %s · acts for %s · created by %s at %s\n", c.TenantID, c.ActorID, c.CreatedBy, c.CreatedAt.Format("2006-01-02 15:04"))
		fmt.Fprintf(w, "  groups %s · credential issued: %v\n", strings.Join(c.AllowedToolGroups, ","), c.HasCredential)
		_, err = fmt.Fprintf(w, "  limits/min: reads %d, candidate writes %d, proposals %d, controlled actions %d; bulk targets %d; paid $%.2f/day\n",
			l.ReadsPerMinute, l.CandidateWritesPerMinute, l.ProposalsPerMinute, l.ControlledActionsPerMinute, l.MaxBulkTargets, l.MaxDailyPaidCostUSD)
		return err
	})
}

// ClientStatusOptions are the options of `client suspend|reactivate|revoke`.
type ClientStatusOptions struct {
	DB              string
	ID              string
	Status          string // the status the command sets
	By              string
	PassphraseStdin bool
}

func newClientStatusCmd(f *Factory, use, short, status string) *cobra.Command {
	o := &ClientStatusOptions{Status: status}
	widens := status == domain.ClientActive // suspending and revoking narrow authority: no passphrase
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			o.DB = dbFlag(cmd)
			o.ID = a[0]
			return clientStatusRun(cmd.Context(), f, o)
		},
	}
	if widens {
		cmd.Flags().StringVar(&o.By, "by", "", "the member taking the action: the passphrase's owner (mock mode) or the signed-in user (live mode), the default and the only one it may name")
		cmd.Flags().BoolVar(&o.PassphraseStdin, "passphrase-stdin", false, "read the seller's approval passphrase from the first line of standard input (for provisioning scripts)")
	} else {
		cmd.Flags().StringVar(&o.By, "by", "", "the member taking the action (recorded in the audit log; in live mode the signed-in user, the only one it may name)")
	}
	return cmd
}

func clientStatusRun(ctx context.Context, f *Factory, o *ClientStatusOptions) error {
	run := func(_ config.Config, ca domain.ClientAdmin, owner string) error {
		by := o.By
		if by == "" {
			by = owner // mock mode: the passphrase's owner acts
		}
		c, err := ca.SetClientStatus(ctx, o.ID, o.Status, by)
		if err != nil {
			return clientError(err)
		}
		_, err = fmt.Fprintf(f.IO.Out, "%s is now %s\n", c.ID, c.Status)
		return err
	}
	if o.Status == domain.ClientActive { // reactivating widens authority
		return withGatedClientAdmin(ctx, f, o.DB, sellerGate{Command: "client reactivate", Stdin: o.PassphraseStdin, Claims: []claim{{"--by", o.By}}}, run)
	}
	return withClientAdmin(ctx, f, o.DB, func(cfg config.Config, ca domain.ClientAdmin) error { return run(cfg, ca, "") })
}

// ClientRotateOptions are the options of `client rotate`.
type ClientRotateOptions struct {
	DB              string
	ID              string
	By              string
	Portable        bool
	JSON            bool
	PassphraseStdin bool
	RemoteURL       string
}

func newClientRotateCmd(f *Factory) *cobra.Command {
	o := &ClientRotateOptions{}
	cmd := &cobra.Command{
		Use:   "rotate ID",
		Short: "Issue a new credential; the old one stops working at once",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			o.DB = dbFlag(cmd)
			o.ID = a[0]
			return clientRotateRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().StringVar(&o.By, "by", "", "the member taking the action: the passphrase's owner (mock mode) or the signed-in user (live mode), the default and the only one it may name")
	cmd.Flags().BoolVar(&o.PassphraseStdin, "passphrase-stdin", false, "read the seller's approval passphrase from the first line of standard input (for provisioning scripts)")
	cmd.Flags().BoolVar(&o.Portable, "portable", false, "use bare `trovesnap` from PATH")
	cmd.Flags().StringVar(&o.RemoteURL, "remote-url", "", remoteURLUsage)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func clientRotateRun(ctx context.Context, f *Factory, o *ClientRotateOptions) error {
	g := sellerGate{Command: "client rotate", Stdin: o.PassphraseStdin, Claims: []claim{{"--by", o.By}}}
	return withGatedClientAdmin(ctx, f, o.DB, g, func(cfg config.Config, ca domain.ClientAdmin, owner string) error {
		by := o.By
		if by == "" {
			by = owner // mock mode: the passphrase's owner acts
		}
		c, token, err := ca.RotateCredential(ctx, o.ID, by)
		if err != nil {
			return clientError(err)
		}
		previews, err := previewsFor(f, cfg, c.ID, token, o.Portable, o.RemoteURL, "")
		if err != nil {
			return err
		}
		if o.JSON {
			return writeJSON(f.IO.Out, RegisterOutput{ClientID: c.ID, Token: token, Client: c, Previews: previews})
		}
		fmt.Fprintf(f.IO.Out, "New token for %s (shown once): %s\n\n", c.ID, token)
		if err := printPreviews(f.IO.Out, previews); err != nil {
			return err
		}
		return liveHostNote(f.IO.Out, cfg)
	})
}

// clientError is adminError for the client and limits commands, which in
// live mode run under the signed-in seller: a refusal says what is missing.
func clientError(err error) error {
	switch {
	case errors.Is(err, domain.ErrPermissionDenied) && strings.Contains(err.Error(), ": user: "):
		return usageError{fmt.Errorf("%w (the signed-in account is not linked to a TroveSnap user: an owner links it through trovesnap.users.auth_subject)", err)}
	case errors.Is(err, domain.ErrPermissionDenied):
		return usageError{fmt.Errorf("%w (changing clients and limits needs %s in the client's tenant; owners hold it)", err, domain.PermClientManage)}
	case errors.Is(err, domain.ErrAuthRequired):
		return fmt.Errorf("%w: sign in again with `trovesnap login`", err)
	}
	return adminError(err)
}

// adminError makes domain errors of seller-side commands readable and maps
// them to usage errors (exit 2) where the input was wrong.
func adminError(err error) error {
	var ie *domain.InputError
	var re *domain.RefError
	switch {
	case errors.As(err, &ie):
		return usageError{fmt.Errorf("--%s: %s", strings.ReplaceAll(ie.Field, "_", "-"), ie.Reason)}
	case errors.As(err, &re):
		return usageError{fmt.Errorf("unknown %s %s", re.Field, re.ID)}
	case errors.Is(err, domain.ErrTransitionInvalid), errors.Is(err, domain.ErrPermissionDenied):
		return usageError{err}
	}
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
