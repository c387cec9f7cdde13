"""vLLM-Omni's diffusers backend (spec 003): its tables, its command line, its facts and fields,
what takes effect in its engine and how the contract carries that; backend.py is its face to the
core. rules/30-diffusers-backend.yaml judges its facts."""
