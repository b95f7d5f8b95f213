package inferencesim

import (
	"context"
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

func (r *rank) handleLoadLoRA(ctx *fasthttp.RequestCtx) {
	var req struct {
		Name string `json:"lora_name"`
		Path string `json:"lora_path"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		openai.WriteError(ctx, openai.NewError(400, "Failed to read and parse request body, "+err.Error()))
		return
	}
	if err := limits.CheckLoRA(req.Name, req.Path); err != nil {
		openai.WriteError(ctx, openai.NewParamError(400, err.Error(), "lora_name"))
		return
	}
	if e := r.loras.Add(config.LoRAModule{Name: req.Name, Path: req.Path, BaseModelName: r.cfg.Model}); e != nil {
		openai.WriteError(ctx, e)
		return
	}
	r.sim.log.Log(context.Background(), levelDebug, "LoRA adapter loaded", "name", req.Name, "path", req.Path)
}

func (r *rank) handleUnloadLoRA(ctx *fasthttp.RequestCtx) {
	var req struct {
		Name string `json:"lora_name"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		openai.WriteError(ctx, openai.NewError(400, "Failed to read and parse request body, "+err.Error()))
		return
	}
	// Like vLLM's simulator, unloading an unknown adapter is not an error.
	r.sim.log.Log(context.Background(), levelDebug, "LoRA adapter unloaded", "name", req.Name)
	if r.loras.Remove(req.Name) {
		// Its series go too, so loading and unloading new names cannot grow
		// the registry without bound.
		r.metrics.DropModel(req.Name)
	}
}
