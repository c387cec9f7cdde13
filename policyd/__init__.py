"""policyd: the runtime-selection policy service for OME-style LLM serving."""
