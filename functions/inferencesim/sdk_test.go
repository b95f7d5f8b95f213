package inferencesim

import (
	"context"
	"errors"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The official OpenAI Go SDK as a real client against a real listener.

func sdkClient(base string, opts ...option.RequestOption) openai.Client {
	opts = append([]option.RequestOption{option.WithBaseURL(base + "/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0)}, opts...)
	return openai.NewClient(opts...)
}

func TestSDKChat(t *testing.T) {
	ts := startSim(t, "--max-num-seqs", "16")
	c := sdkClient(ts.url())
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:     "fake-model",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello there, how are you?")},
		MaxTokens: openai.Int(16),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Object != "chat.completion" || resp.Model != "fake-model" {
		t.Fatalf("unexpected envelope: %+v", resp)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" {
		t.Fatalf("no content: %+v", resp.Choices)
	}
	u := resp.Usage
	if u.PromptTokens != int64(textgen.CountTokens("### user: Hello there, how are you?\n")) || u.CompletionTokens < 1 || u.CompletionTokens > 16 ||
		u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v", u)
	}
	if got := textgen.CountTokens(resp.Choices[0].Message.Content); int64(got) != u.CompletionTokens {
		t.Fatalf("content has %d tokens, usage says %d", got, u.CompletionTokens)
	}
	fr := resp.Choices[0].FinishReason
	if (fr == "length") != (u.CompletionTokens == 16) {
		t.Fatalf("finish_reason %q with %d tokens", fr, u.CompletionTokens)
	}
}

func TestSDKChatStream(t *testing.T) {
	ts := startSim(t)
	c := sdkClient(ts.url())
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "fake-model",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
		MaxTokens:     openai.Int(12),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	var text strings.Builder
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		chunks++
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Usage.CompletionTokens < 1 || int64(textgen.CountTokens(text.String())) != acc.Usage.CompletionTokens {
		t.Fatalf("streamed %q but usage %+v", text.String(), acc.Usage)
	}
	// role chunk + one per token + finish chunk + usage chunk
	if want := int(acc.Usage.CompletionTokens) + 3; chunks != want {
		t.Fatalf("got %d chunks, want %d", chunks, want)
	}
	if acc.Choices[0].FinishReason == "" {
		t.Fatal("no finish reason")
	}
}

func TestSDKCompletions(t *testing.T) {
	ts := startSim(t, "--mode", "echo")
	c := sdkClient(ts.url())
	resp, err := c.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:  "fake-model",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("The quick brown fox")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Object != "text_completion" || len(resp.Choices) != 1 || resp.Choices[0].Text != "The quick brown fox" {
		t.Fatalf("echo completion: %+v", resp)
	}
	if resp.Usage.PromptTokens != 4 || resp.Usage.CompletionTokens != 4 {
		t.Fatalf("usage %+v", resp.Usage)
	}
	// token-id prompts fan out into one choice per prompt
	resp, err = c.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:  "fake-model",
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokenArrays: [][]int64{{1, 2, 3}, {4, 5}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 2 || resp.Usage.PromptTokens != 5 || resp.Choices[0].Text != "1,2,3" {
		t.Fatalf("token prompts: %+v", resp)
	}
}

func TestSDKModels(t *testing.T) {
	ts := startSim(t, "--served-model-name", "alias-a", "alias-b", "--lora-modules", `{"name":"tweet-summary","path":"/loras/tweet"}`)
	c := sdkClient(ts.url())
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "alias-a,alias-b,tweet-summary" {
		t.Fatalf("models %v", ids)
	}
	if page.Data[0].OwnedBy != "vllm" || page.Data[0].Object != "model" {
		t.Fatalf("model entry %+v", page.Data[0])
	}
}

func TestSDKInjectedErrors(t *testing.T) {
	ts := startSim(t, "--failure-injection-rate", "100", "--failure-types", "rate_limit")
	c := sdkClient(ts.url())
	params := openai.ChatCompletionNewParams{Model: "fake-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	_, err := c.Chat.Completions.New(context.Background(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("want a 429 API error, got %v", err)
	}
	if apiErr.Type != "RateLimitError" || !strings.Contains(apiErr.Message, "Rate limit reached for fake-model") {
		t.Fatalf("error body %+v", apiErr)
	}

	plain := startSim(t)
	c = sdkClient(plain.url(), option.WithHeader("X-Return-Error", "503"))
	_, err = c.Chat.Completions.New(context.Background(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Type != "InternalServerError" {
		t.Fatalf("want 503 from X-Return-Error, got %v", err)
	}
	c = sdkClient(plain.url())
	params.Model = "no-such-model"
	_, err = c.Chat.Completions.New(context.Background(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Param != "model" {
		t.Fatalf("want 404 for an unknown model, got %v", err)
	}
}
