// composeload loads a Compose file with compose-go, the loader Docker Compose itself
// uses (schema validation, interpolation, merge keys, normalisation), and prints the
// resolved project as JSON. Used by tests/docker/test_compose_loader.py; no Docker engine.
//
//	composeload COMPOSE_FILE ENV_FILE [PROFILE...]
//
// Exit 1 with the loader's message when the file does not load.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: composeload COMPOSE_FILE ENV_FILE [PROFILE...]")
		os.Exit(2)
	}
	profiles := os.Args[3:]
	if len(profiles) == 0 {
		profiles = []string{"*"} // every service, whatever its profiles
	}
	options, err := cli.NewProjectOptions(
		[]string{os.Args[1]},
		cli.WithEnvFiles(os.Args[2]),
		cli.WithDotEnv,
		cli.WithProfiles(profiles),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := project.MarshalJSON()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
