package inferencesim

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/hftokenizer"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/render"
)

// loadTokenizer is the prompts' tokenizer: --tokenizer's tokenizer.json, else the model's in
// --tokenizers-cache-dir, else the dummy tokenizer. Nothing is downloaded: a cache without the
// model's file is warned about once, at every verbosity, and the dummy tokenizer counts.
func (s *Simulator) loadTokenizer() (textgen.Tokenizer, error) {
	path := s.cfg.Tokenizer
	if path == "" && s.cfg.TokenizersCacheDir != "" {
		found, err := hftokenizer.FindInCache(s.cfg.TokenizersCacheDir, s.cfg.Model)
		if err != nil || found == "" {
			s.log.Warn("--tokenizers-cache-dir holds no tokenizer.json of the model; nothing is downloaded, so the dummy tokenizer counts tokens",
				"dir", s.cfg.TokenizersCacheDir, "model", s.cfg.Model, "err", err)
			return textgen.Dummy, nil
		}
		path = found
	}
	if path == "" {
		return textgen.Dummy, nil
	}
	tok, err := hftokenizer.Load(path)
	if err != nil {
		return nil, err
	}
	s.log.Log(context.Background(), levelInfo, "tokenizer loaded", "path", tok.Path)
	return tok, nil
}

// /tokenize: {"prompt"} or {"messages"} → {"max_model_len","count","tokens","token_strs":null}.
func (r *rank) handleTokenize(ctx *fasthttp.RequestCtx) {
	var req struct {
		Model    string               `json:"model"`
		Prompt   *string              `json:"prompt"`
		Messages []openai.ChatMessage `json:"messages"`
	}
	if e := openai.DecodeBody(ctx.PostBody(), &req); e != nil {
		openai.WriteError(ctx, e)
		return
	}
	var text string
	switch {
	case req.Prompt != nil:
		text = *req.Prompt
	case req.Messages != nil:
		text = string(engine.AppendChatPrompt(nil, req.Messages))
	default:
		openai.WriteError(ctx, openai.NewParamError(400, "either prompt or messages is required", "prompt"))
		return
	}
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.SetBody(render.Tokenize(nil, r.cfg.MaxModelLen, r.gen.Tokenizer.AppendIDs(nil, text)))
}
