// compose-config: loads a compose file the way `docker compose config` does (compose-go,
// the Compose Specification's own loader: schema, interpolation, references between
// services, configs, volumes), prints each service's image, and exits 1 on an invalid file.
//
//	go run ./scripts/image/compose-config docker-compose.yml
package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	file := "docker-compose.yml"
	if len(os.Args) > 1 {
		file = os.Args[1]
	}
	opts, err := cli.NewProjectOptions([]string{file}, cli.WithOsEnv, cli.WithResolvedPaths(true))
	if err != nil {
		fail(err)
	}
	project, err := cli.ProjectFromOptions(context.Background(), opts)
	if err != nil {
		fail(err)
	}
	names := project.ServiceNames()
	sort.Strings(names)
	for _, name := range names {
		service := project.Services[name]
		build := ""
		if service.Build != nil {
			build = " (build: " + service.Build.Context + ")"
		}
		fmt.Printf("%s: %s%s\n", name, service.Image, build)
	}
	fmt.Printf("%s: valid, project %s, %d services\n", file, project.Name, len(names))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "compose-config: %v\n", err)
	os.Exit(1)
}
