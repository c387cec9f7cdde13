"""The renderer: turns a decision (InferenceService, runtime, model, accelerator class)
into Kubernetes objects, as pure functions over manifests."""

from clients.renderer.render import RenderInput, RenderResult, render

__all__ = ["RenderInput", "RenderResult", "render"]
