package inferencesim

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func TestSDKResponses(t *testing.T) {
	ts := startSim(t, "--mode", "echo")
	c := sdkClient(ts.url())
	resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model:           "fake-model",
		Instructions:    openai.String("be brief"),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello from the Responses API")},
		MaxOutputTokens: openai.Int(64),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.ID, "resp_") || resp.Status != "completed" || resp.OutputText() != "Hello from the Responses API" {
		t.Fatalf("response %+v", resp)
	}
	if resp.Usage.OutputTokens != 5 || resp.Usage.InputTokens == 0 || resp.Usage.TotalTokens != resp.Usage.InputTokens+5 {
		t.Fatalf("usage %+v", resp.Usage)
	}

	stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "fake-model",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("stream me please")},
	})
	var types []string
	var text strings.Builder
	seq := int64(0)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Fatalf("sequence number %d, want %d", ev.SequenceNumber, seq)
		}
		seq++
		types = append(types, ev.Type)
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		strings.Repeat("response.output_text.delta ", 3) +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if strings.Join(types, " ") != want || text.String() != "stream me please" {
		t.Fatalf("events %v text %q", types, text.String())
	}
	if s, _, body := post(t, ts.url()+"/v1/responses", `{"model":"fake-model","input":"x","tools":[{"type":"function","name":"f"}]}`); s != 400 {
		t.Fatalf("tools on /v1/responses: %d %s", s, body)
	}
}
