"""Speculative decoding's draft steps, one row: k draft steps, tokens per step (1 - a^(k+1)) / (1 - a).

An MTP / EAGLE head is one decoder layer of the target (its rows at one query token, over the layer count:
head_share) and the lm_head, k times; a draft model is its own decode step (same deployment, bf16 unless it ships
otherwise), k times; n-gram drafting costs no GPU work here. The head's share is also what it holds in memory (its
weights and KV pages: rooflab.step.memory.draft_memory), with the facts below of what vLLM loads for it.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ..deployment import SpecMethod
from ..load import load_model
from .gemms import logits
from .pricing import StepContext
from .rows import StepRow, scaled, summed
from .work import StepWork, layer_rows

#: The decoder layers an MTP / EAGLE head is: one. EAGLE's and EAGLE-3's checkpoints hold one (vLLM v0.11.0
#: model_executor/models/llama_eagle.py:66-72 builds num_hidden_layers of them, 1 in the EAGLE checkpoints;
#: llama_eagle3.py:123-129 one), DeepSeek-V3's MTP module one MTP layer (num_nextn_predict_layers 1 in its
#: config.json; deepseek_mtp.py:100-108 builds that many).
HEAD_LAYERS = 1
#: The hidden states the head's input projection takes, each of the hidden size, into one: EAGLE's fc the token's
#: embedding and the target's hidden state (2H x H, llama_eagle.py:74-76), EAGLE-3's three of the target's hidden
#: states (3H x H, llama_eagle3.py:131-138), DeepSeek's MTP eh_proj two (2H x H, deepseek_mtp.py:53-55): a
#: torch.nn.Linear each, whole on every rank, in the model's dtype. Held in memory (draft_memory); its GEMM is not
#: priced here.
HEAD_FC_INPUTS = {SpecMethod.eagle: 2, SpecMethod.eagle3: 3, SpecMethod.mtp: 2}
#: The heads that hold an lm_head of their own: DeepSeek's MTP layer, its shared_head.head (deepseek_mtp.py:35-37,
#: loaded from the checkpoint's MTP layer :270-271, its logits from it :141-144), a vocabulary x H more on the GPUs.
#: EAGLE's is the target's (v1/spec_decode/eagle.py:886-890); EAGLE-3's the target's where its draft vocabulary is
#: the target's (eagle.py:891-899; the default, llama_eagle3.py:201-205), else its own of draft_vocab_size (eagle.py
#: :900-903), which rooflab does not know without the checkpoint and does not count. Both share the target's
#: embeddings where the shapes match (eagle.py:854-872), as DeepSeek's MTP does.
OWN_LM_HEAD = frozenset({SpecMethod.mtp})


def head_share(model) -> Fraction:
    """An MTP / EAGLE head as a share of the target's decoder layers (HEAD_LAYERS over its layer count): the share
    of each of the target's layer rows it runs (draft_rows) and of the target's layer weights and KV pages it holds
    (rooflab.step.memory.draft_memory)."""
    return Fraction(HEAD_LAYERS, model.num_layers)


def draft_rows(ctx: StepContext, decodes: int, context_len: int) -> list[StepRow]:
    """The k draft steps of the deployment's speculative decoding (the module docstring); none for n-gram."""
    spec = ctx.dep.speculative
    k = spec.num_speculative_tokens
    if spec.method is SpecMethod.ngram:
        return []
    if spec.method is SpecMethod.draft_model:
        draft = load_model(spec.draft_model)
        sub = dataclasses.replace(ctx, model=draft, weights_as=None)
        one = layer_rows(sub, StepWork(decodes, 1, context_len)) + logits(sub, decodes)
        what = f"draft model {draft.name}: {k} decode steps"
    else:
        sub = ctx
        share = float(head_share(ctx.model))
        per_layer = [scaled(r, share) for r in layer_rows(ctx, StepWork(decodes, 1, context_len))]
        one = per_layer + logits(ctx, decodes)
        what = f"{spec.method.value} head (one decoder layer + lm_head): {k} draft steps"
    predicted_from = ", ".join(sorted({r.predicted_from for r in one if r.predicted_from})) or None
    row = summed(one, k, "draft", what, predicted_impl="rooflab", part="decode",
                 source=f"the step's own rows for the draft ({sub.model.name}), {k} times")
    return [dataclasses.replace(row, predicted_from=None if row.t_predicted_s is None else predicted_from)]


__all__ = ["HEAD_FC_INPUTS", "HEAD_LAYERS", "OWN_LM_HEAD", "draft_rows", "head_share"]
