package lensctl

import (
	"fmt"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"
)

func (a *app) backendsCmd() *cobra.Command {
	return &cobra.Command{Use: "backends", Short: "Simulation backends, whether they are available and the trace formats they read", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out struct {
				Backends []record `json:"backends"`
			}
			if err := a.client.JSON(cmd.Context(), "GET", simAPI+"/backends", nil, nil, &out); err != nil {
				return err
			}
			return a.printer.print(out, func(t table.Writer) {
				t.AppendHeader(table.Row{"NAME", "AVAILABLE", "VERSION", "TRACE FORMATS", "REASON"})
				for _, b := range out.Backends {
					caps, _ := b["capabilities"].(map[string]any)
					formats, _ := caps["trace_formats"].([]any)
					t.AppendRow(table.Row{b.str("name"), b.str("available"), b.str("version"), joinAny(formats), b.str("unavailable_reason")})
				}
			})
		}}
}

func (a *app) scenariosCmd() *cobra.Command {
	return &cobra.Command{Use: "scenarios", Short: "Simulation scenarios and the backends that support them", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out struct {
				Scenarios []record `json:"scenarios"`
			}
			if err := a.client.JSON(cmd.Context(), "GET", simAPI+"/scenarios", nil, nil, &out); err != nil {
				return err
			}
			return a.printer.print(out, func(t table.Writer) {
				t.AppendHeader(table.Row{"NAME", "DISPLAY NAME", "BACKENDS"})
				for _, s := range out.Scenarios {
					backends, _ := s["supported_backends"].([]any)
					t.AppendRow(table.Row{s.str("name"), s.str("display_name"), joinAny(backends)})
				}
			})
		}}
}

func (a *app) discoverCmd() *cobra.Command {
	var keyEnv string
	c := &cobra.Command{Use: "discover ENDPOINT_URL", Short: "List the models an OpenAI-compatible endpoint serves", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			body := map[string]any{"endpoint_url": argv[0]}
			if keyEnv != "" {
				// The key is read from the environment, never from a flag (shell history, ps).
				key := a.getenv(keyEnv)
				if key == "" {
					return usageError{fmt.Errorf("--api-key-env %s names an empty variable", keyEnv)}
				}
				body["api_key"] = key
			}
			var out struct {
				Endpoint string   `json:"endpoint"`
				Models   []string `json:"models"`
			}
			if err := a.client.JSON(cmd.Context(), "POST", simAPI+"/models/discover", nil, body, &out); err != nil {
				return err
			}
			return a.printer.print(out, func(t table.Writer) {
				t.AppendHeader(table.Row{"ENDPOINT", "MODEL"})
				for _, m := range out.Models {
					t.AppendRow(table.Row{out.Endpoint, m})
				}
			})
		}}
	c.Flags().StringVar(&keyEnv, "api-key-env", "", "the environment variable holding the endpoint's API key")
	return c
}

func joinAny(vs []any) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, ", ")
}
