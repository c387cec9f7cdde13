"""The spec's model_index.json example (000_4f25be48ab7aa4be.txt, "What OME records for the model")."""

from __future__ import annotations

from typing import Any


def sd15_model_index() -> dict[str, Any]:
    return {
        "_class_name": "StableDiffusionPipeline",
        "_diffusers_version": "0.24.0",
        "scheduler": ["diffusers", "EulerDiscreteScheduler"],
        "text_encoder": ["transformers", "CLIPTextModel"],
        "tokenizer": ["transformers", "CLIPTokenizer"],
        "unet": ["diffusers", "UNet2DConditionModel"],
        "vae": ["diffusers", "AutoencoderKL"],
        "safety_checker": ["diffusers", "StableDiffusionSafetyChecker"],
    }
