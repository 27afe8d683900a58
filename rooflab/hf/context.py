"""vLLM's default max_model_len, derived from config.json as vLLM derives it.

vLLM's `_get_and_verify_max_len` (vllm/config/model.py, main at commit 0052a5b), for a config and no
--max-model-len:

    1. the smallest of the length keys the config gives: max_position_embeddings, n_positions, max_seq_len,
       seq_length, model_max_length, max_target_positions, max_sequence_length, max_seq_length, seq_len
    2. model_max_length, where given and non-zero, replaces it (Command-R / Cohere, Cohere2, Aya Vision)
    3. no key at all: 2048 (vLLM warns)
    4. rope scaling (rope_scaling, or transformers v5's rope_parameters, a dict or one dict per layer type),
       except for Gemma 3 (its 128K is already scaled): for rope types other than su, longrope and llama3
       the length is multiplied by the factor (1 where none); yarn starts from the scaling's own
       original_max_position_embeddings
    5. longrope (Phi-3 128k, Phi-4-mini): the default is the top-level original_max_position_embeddings,
       else the derived length ("to avoid performance degradation for shorter sequences")

The tokenizer_config.json's model_max_length, which vLLM also takes the minimum with, is not part of
config.json and is not read. A rope scaling's type is `rope_type`, or the older `type` (transformers'
patch_rope_parameters maps one to the other before vLLM reads it).
"""

from __future__ import annotations

from typing import Any, Mapping

from .read import Fields

#: The length keys vLLM reads, in its order (step 1).
LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
               "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
#: vLLM's length where the config gives none (step 3).
DEFAULT_MAX_LEN = 2048
#: Rope types whose factor vLLM does not apply (step 4).
UNSCALED_ROPE = ("su", "longrope", "llama3")
#: A factor beyond this is refused (the largest real one, DeepSeek-V3's yarn, is 40).
MAX_ROPE_FACTOR = 1024.0


def vllm_max_model_len(c: Fields) -> int:
    """The max_model_len vLLM serves the config's model with by default (the module docstring's steps)."""
    lengths = {key: c.count(key) for key in LENGTH_KEYS if c.raw(key, None) is not None}
    derived = min(lengths.values()) if lengths else None
    if lengths.get("model_max_length"):
        derived = lengths["model_max_length"]
    if derived is None:
        derived = DEFAULT_MAX_LEN
    scalings = _rope_scalings(c)
    if scalings and "gemma3" not in _model_types(c):
        factor = 1.0
        for key, rp in scalings.items():
            kind = _rope_type(c, key, rp)
            if kind not in UNSCALED_ROPE:
                factor = _factor(c, key, rp, factor)
                if kind == "yarn":
                    derived = _whole(c, f"{key}.original_max_position_embeddings",
                                     rp.get("original_max_position_embeddings"))
        derived = derived * factor
    if any(_rope_type(c, key, rp) == "longrope" for key, rp in scalings.items()):
        original = c.raw("original_max_position_embeddings", None)
        return c.count("original_max_position_embeddings") if original is not None else int(derived)
    return int(derived)


def _rope_scalings(c: Fields) -> dict[str, Mapping[str, Any]]:
    """{field: scaling} of rope_scaling / rope_parameters: one entry, or one per layer type."""
    for key in ("rope_parameters", "rope_scaling"):
        value = c.raw(key, None)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise c.error(key, value, "must be a mapping (a rope scaling, or one per layer type)")
        if value and all(isinstance(v, dict) for v in value.values()):
            return {f"{key}.{name}": v for name, v in value.items()}
        return {key: value}
    return {}


def _rope_type(c: Fields, key: str, rp: Mapping[str, Any]) -> str:
    kind = rp.get("rope_type", rp.get("type", "default"))
    if not isinstance(kind, str) or not kind:
        raise c.error(f"{key}.rope_type", kind, "must be a rope type's name")
    return kind


def _factor(c: Fields, key: str, rp: Mapping[str, Any], default: float) -> float:
    value = rp.get("factor", default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_ROPE_FACTOR:
        raise c.error(f"{key}.factor", value, f"must be a number in (0, {MAX_ROPE_FACTOR:g}]")
    return float(value)


def _whole(c: Fields, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1 \
            or value > 1 << 40:
        raise c.error(key, value, "must be a whole number of tokens (yarn scales from it)")
    return int(value)


def _model_types(c: Fields) -> str:
    return " ".join(str(d.get("model_type", "")) for d in (c.data, c.outer))


__all__ = ["DEFAULT_MAX_LEN", "LENGTH_KEYS", "vllm_max_model_len"]
