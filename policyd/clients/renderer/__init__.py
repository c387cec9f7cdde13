"""The renderer: turns a decision (InferenceService, runtime, model, accelerator class)
into Kubernetes objects, as pure functions over manifests (entry point: render.render). Nothing
is imported here, so a client reading one of its tables (merge.py) loads no more than that."""
