package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"munin/internal/app"
	"munin/internal/memory"
	"munin/internal/service"
)

func keyCmd(args []string, stdout, stderr io.Writer) error {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	help := isHelpFlag(sub)
	if !help && sub != "create" && sub != "list" && sub != "revoke" {
		return errors.New("key needs a subcommand: create, list or revoke (munin key --help lists the flags)")
	}
	var cfg app.Config
	name := "key " + sub
	if help {
		name = "key" // the flags all subcommands share
	}
	fs := newFlags(name, &cfg, adminSettings...)
	var ref memory.ProjectRef
	fs.StringVar(&ref.Workspace, "workspace", "default", "workspace of the key")
	fs.StringVar(&ref.Project, "project", "default", "project of the key")
	agent := fs.String("agent", "", "the agent's name (create)")
	role := fs.String("role", "write", "read, propose, write or admin (create)")
	serverAdmin := fs.Bool("server-admin", false, "create a server-admin key: administers every project, reads no memory (create)")
	adminEtcd(fs)
	if help {
		return helpFor(fs)
	}
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if *serverAdmin {
		if err := serverAdminFlags(fs, args[0]); err != nil {
			return err
		}
	}
	want := 0 // arguments: revoke takes the key id
	if args[0] == "revoke" {
		want = 1
	}
	if len(pos) != want {
		return fmt.Errorf("key %s takes %d arguments, got %q", args[0], want, pos)
	}
	// Only create may start a new data directory.
	return withService(cfg, args[0] != "create", func(ctx context.Context, svc *service.Service) error {
		switch args[0] {
		case "create":
			if *serverAdmin {
				token, key, err := svc.CreateServerAdminKey(ctx, *agent)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "server-admin key %d for %s (administers every project, reads no memory) — shown only once:\n%s\n", key.ID, key.Agent, token)
				return nil
			}
			r, err := memory.ParseRole(*role)
			if err != nil {
				return err
			}
			token, key, err := svc.CreateKey(ctx, ref, *agent, r)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "key %d for %s in %s (%s) — shown only once:\n%s\n", key.ID, key.Agent, ref, key.Role, token)
			return nil
		case "list":
			keys, err := svc.ListKeys(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPROJECT\tAGENT\tROLE\tCREATED\tLAST USED\tSTATUS")
			for _, k := range keys {
				last, status := "never", "active"
				if k.LastUsedAt != nil {
					last = k.LastUsedAt.Format("2006-01-02 15:04")
				}
				if k.Revoked {
					status = "revoked"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.ProjectLabel(), k.Agent, k.Role, k.CreatedAt.Format("2006-01-02 15:04"), last, status)
			}
			return tw.Flush()
		case "revoke":
			id, err := strconv.ParseInt(pos[0], 10, 64)
			if err != nil {
				return fmt.Errorf("key revoke needs a key id, got %q", pos[0])
			}
			if err := svc.RevokeKey(ctx, id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "key %d revoked\n", id)
			return nil
		}
		return fmt.Errorf("unknown key subcommand %q", args[0])
	})
}

// serverAdminFlags refuses what does not go with --server-admin: a
// server-admin key has no project and no project role.
func serverAdminFlags(fs *flag.FlagSet, sub string) error {
	if sub != "create" {
		return fmt.Errorf("--server-admin goes with key create only")
	}
	var clash []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "workspace" || f.Name == "project" || f.Name == "role" {
			clash = append(clash, "--"+f.Name)
		}
	})
	if len(clash) > 0 {
		return fmt.Errorf("a server-admin key belongs to no project and has no project role: drop %s", strings.Join(clash, ", "))
	}
	return nil
}

func projectCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if st, ok := projectSettings[args[0]]; ok {
			return projectSettingCmd(st, args[1:], stdout)
		}
	}
	help := len(args) > 0 && isHelpFlag(args[0])
	if !help && (len(args) == 0 || args[0] != "list") {
		return errors.New("project needs a subcommand: list, review or similar")
	}
	var cfg app.Config
	fs := newFlags("project list", &cfg, adminSettings...)
	adminEtcd(fs)
	if help {
		return helpFor(fs)
	}
	if err := parseNoArgs(fs, args[1:]); err != nil {
		return err
	}
	return withService(cfg, true, func(ctx context.Context, svc *service.Service) error {
		projects, err := svc.ListProjects(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKSPACE\tPROJECT\tWRITE BUDGET\tCREATED")
		for _, p := range projects {
			budget := "default"
			if p.WriteBudget > 0 {
				budget = strconv.Itoa(p.WriteBudget)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Ref.Workspace, p.Ref.Project, budget, p.CreatedAt.Format("2006-01-02 15:04"))
		}
		return tw.Flush()
	})
}
