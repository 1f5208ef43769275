package cli

import (
	"context"
	"fmt"
	"io"

	"munin/internal/app"
	"munin/internal/memory"
	"munin/internal/service"
)

// projectSetting is a setting of a project that "munin project NAME W/P
// VALUE" sets: its name, the values it takes (for the usage message), how
// a value is checked and how the service sets it.
type projectSetting struct {
	name, values string
	parse        func(string) (string, error)
	set          func(*service.Service, context.Context, memory.ProjectRef, string) error
}

// projectSettings are the settings of a project the command line sets, by
// subcommand.
var projectSettings = map[string]projectSetting{
	"review":  {"review", "off|agents", memory.ParseReview, (*service.Service).SetProjectReview},
	"similar": {"similar", "on|off", memory.ParseSimilarSetting, (*service.Service).SetProjectSimilar},
}

// projectSettingCmd sets a project's setting: munin project review W/P
// off|agents, munin project similar W/P on|off. Project and value are
// checked before the data directory is opened.
func projectSettingCmd(st projectSetting, args []string, stdout io.Writer) error {
	var cfg app.Config
	fs := newFlags("project "+st.name, &cfg, adminSettings...)
	adminEtcd(fs)
	if len(args) > 0 && isHelpFlag(args[0]) {
		return helpFor(fs)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("project %s takes a project and a setting: munin project %s W/P %s, got %q", st.name, st.name, st.values, pos)
	}
	ref, err := memory.ParseProject("project", pos[0])
	if err != nil {
		return err
	}
	value, err := st.parse(pos[1])
	if err != nil {
		return err
	}
	return withService(cfg, true, func(ctx context.Context, svc *service.Service) error {
		if err := st.set(svc, ctx, ref, value); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s of %s: %s\n", st.name, ref, value)
		return nil
	})
}
