"""vLLM's profile run, modelled: the torch memory its dummy batch adds above the weights (the activation peak).

vLLM sizes its KV cache after one forward pass of a dummy batch of `max_num_batched_tokens` tokens over
`max_num_seqs` sequences and one sampler pass over those sequences' last tokens (V0: vllm v0.6.4
vllm/worker/model_runner.py profile_run; V1: vllm v0.10.0 vllm/v1/worker/gpu_model_runner.py profile_run and
_dummy_sampler_run, with min(max_num_batched_tokens, max_num_seqs) requests). It charges the increase of
torch's allocated-bytes peak. rooflab models that peak as the larger of two moments, since the forward's
buffers are freed before the sampler runs:

    forward   T x (3 H + max(3 F / tp, (q + k + v + o) / tp, MoE)) x b
              the residual stream, the layer's input and its normalised copy (3 H), beside the largest
              block's intermediates: gate and up (2 F) and their product (F) of a dense MLP; q, k, v and the
              attention output; for a MoE, fused_moe's caches k (2 F' + F' + H) per token (vllm v0.6.x
              vllm/model_executor/layers/fused_moe/fused_moe.py, fused_experts: intermediate caches 1, 2 and 3,
              in chunks of at most 32,768 tokens), F' = F / tp; under expert parallelism F' = F: the experts'
              TP is 1 and each GPU runs whole experts (vllm v0.8.4 fused_moe/layer.py FusedMoE.__init__ "Set TP
              size to 1 to adjust for EP"; v0.10.2 fused_moe/config.py FusedMoEParallelConfig.make, tp_size=1).
              From v0.8.0 caches 1 and 3 share one buffer (cache13, M k max(2 F', H)); rooflab keeps the three
              apart (not re-derived)
    sampler   R x V x s + T x H x b   (R requests, vocabulary V; the forward's output hidden states are still
              held while the sampler runs: vllm v0.10.0 gpu_model_runner.py profile_run keeps `hidden_states`
              beside the `last_hidden_states` it samples from; V0's execute_model likewise)
              V0 (vllm-v0.6.4, vllm-v0), s = 38 bytes, the tensors alive at the sampler's peak, the sort of
              _apply_top_k_top_p (the profile asks for top_p 0.99 and top_k V - 1, so it runs; FlashInfer's
              sampler only with VLLM_USE_FLASHINFER_SAMPLER=1; vllm/model_executor/layers/sampler.py at
              d5b68aba2ff6dd17060a62c0cb799c0acedb524f (v0.6.4) and da02cb4b2 (v0.7.0)):
                  2   the model-dtype logits, held by execute_model while it samples (vllm/worker/model_runner.py)
                  4   their fp32 copy (Sampler.forward: logits.to(torch.float), then div_ by the temperature)
                  4   the sorted values and
                  8   their int64 indices (logits.sort)
                  8   the sort's int64 source indices and
                 12   CUB's alternate key (4) and value (8) buffers, its temporary storage, both through the
                      caching allocator (PyTorch aten/src/ATen/native/cuda/SortStable.cu segmented_sort_pairs, R >=
                      128 rows; below 128 segmented_sort_pairs_by_full_sort: two int2 (8 + 8) arrays, a key copy
                      (4) and CUB's buffers (4 + 8), so s = 50; pytorch/pytorch at 061531e)
              freed when the sort returns; the masks, softmax, cumulative sum and scatter-back that follow hold
              2 + 4 + 4 + 8 + 1 + 4 + 4 + 1 + 4 = 32, the probabilities and log-probabilities after them 14.
              Measured (benchmarks/v0_sampler_peak.py, H200, torch 2.11): 38.06 at 256 rows, 51.05 at 32.
              vllm-v0.2 keeps 40 (not re-derived).
              V1 from v0.17.0, s = 15 bytes: fitted to the vLLM v0.19.0 H100 logs of dense models (14.7 to 15.0
              bytes once the hidden states are counted); these releases filter top-k / top-p with a Triton kernel
              for 8 rows or more and sort no vocabulary (vllm v0.17.0 and v0.19.0 vllm/v1/sample/ops/
              topk_topp_sampler.py apply_top_k_top_p, topk_topp_triton.py; below 8 rows the sort below).
              V1 v0.9.1 - v0.16.x (EngineSettings.release), s = 38 bytes (50 below 128 rows): V0's sort, tensor
              for tensor. _dummy_sampler_run holds the model-dtype logits (2) while Sampler.forward samples from
              their fp32 copy (4, logits.to(torch.float32)); the profile's top_k V - 1 and top_p 0.9 take
              TopKTopPSampler.forward_native's apply_top_k_top_p, whose logits.sort holds the sorted values (4),
              their int64 indices (8) and PyTorch's sort buffers (8 + 12) as above (vllm
              v0.10.0, v0.10.2, v0.15.0 and v0.16.0 vllm/v1/sample/ops/topk_topp_sampler.py and sampler.py;
              vllm v0.10.0 vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run). FlashInfer's sampler is opt-in
              from v0.11.1 (VLLM_USE_FLASHINFER_SAMPLER=1), so v0.11.1 - v0.16.x sort as above. Measured
              (benchmarks/v0_sampler_peak.py, H200, torch 2.11): 36.02 + 2 at 1,024 rows of 151,936 and of 128,256.
              V1 v0.9.1 - v0.11.0 with FlashInfer installed on an NVIDIA GPU (EngineSettings.flashinfer_installed,
              the official Docker image's default; the pip wheel does not require it: v0.9.1's Requires-Dist names
              no flashinfer, v0.10.1.1's, v0.10.2's and v0.11.0's an extra, flashinfer-python 0.2.11, 0.3.0 and
              0.3.1), s = 14 bytes: TopKTopPSampler takes forward_cuda wherever `import flashinfer.sampling`
              succeeds and VLLM_USE_FLASHINFER_SAMPLER is unset (vllm v0.9.1, v0.10.1.1, v0.10.2 and v0.11.0
              vllm/v1/sample/ops/topk_topp_sampler.py __init__), and with both top-k and top-p set, as the
              profile's are, flashinfer_sample calls flashinfer.sampling.top_k_top_p_sampling_from_logits, which
              sorts nothing: top_k_mask_logits writes a masked copy (torch.empty_like, fp32) and torch.softmax its
              probabilities (fp32) before the rejection-sampling kernel returns R int32 tokens (flashinfer-python
              0.2.11 and 0.3.0 flashinfer/sampling.py, filter_apply_order "top_k_first"):
                  2   the model-dtype logits (_dummy_sampler_run), 4 their fp32 copy (Sampler.forward),
                  4   the masked logits and 4 the probabilities
              (derived, not measured). The sort's 38 bytes are corroborated post hoc by the four held-out logs in
              these releases that print 'FlashInfer is not available' (sets 7, 8 twice and 10: each within 5% with
              --no-flashinfer, +3.6% to +9.4% without); no log in range checks the 14 bytes yet. From v0.10.2 a processed
              --logprobs-mode (EngineSettings.logprobs_mode: processed_logprobs, NeMo RL's) keeps the sort above
              whatever FlashInfer and VLLM_USE_FLASHINFER_SAMPLER say (vocab.LogprobsMode).
              V1 v0.8.x (vllm-v0.8): the same s as v0.17's, but beside R x H hidden states, not T x H: its _dummy_run
              returns hidden_states[logit_indices], the last token of each request, and the full output is
              freed before the sampler runs (vllm/v1/worker/gpu_model_runner.py _dummy_run and profile_run at
              48cb2109b61676ebc0e7e76022a0be51a41a08b8)

    peak = max(forward, sampler + in V1 from v0.14.0 the fused-MoE caches): from v0.14.0 the unquantized and fp8
           MoE methods run FusedMoEModularKernel, whose workspaces are WorkspaceManager's buffers, allocated once at
           the largest size asked and kept (vllm v0.14.0 and v0.19.0 vllm/model_executor/layers/fused_moe/
           modular_kernel.py, vllm/v1/worker/workspace.py; the v0.19.0 logs of Qwen3-30B-A3B, DeepSeek-V2-Lite and
           Mixtral exceed the sampler by about their size). Up to v0.13.x (and in vllm-v0.8) fused_experts_impl
           allocates its caches with torch.empty on each call and frees them on return (vllm v0.8.5, v0.10.0 and
           v0.13.0 vllm/model_executor/layers/fused_moe/fused_moe.py), so they count in the forward moment only

T = max_num_batched_tokens, H = hidden size, F = the MLP's intermediate size, b = bytes of the activations'
dtype. The forward term reproduces vllm#10517's RTX 3090 peaks (Llama-3.1-8B, 20,000 and 29,000 tokens: 2.07 and
2.99 GiB logged, 2.06 and 2.99 modelled), the sampler term vllm#10511's Llama-3-8B peak on an H100 (1.26 GiB
logged, 1.22 modelled: 256 sequences x 128,256 x 38 bytes beside 8,192 x 4,096 x 2 of hidden states). A V0 peak
below the sampler's R x V x 6 bytes (the logits and their fp32 copy, before any sort) means the run profiled
fewer sequences than its settings say (a --max-num-seqs not given here).
vLLM V0 under tensor parallelism gathers the logits on rank 0 only, which then keeps the fewest blocks (the engine
takes the minimum over ranks), so the sampler term applies at every TP size; under pipeline parallelism only the
last stage samples (engines/pipeline.py).

A vision-language model (ModelSpec.image_tokens > 0) in vLLM V1 first runs its encoder over dummy images and keeps
the outputs in its encoder cache until the sampler has run (vllm v0.10.2 vllm/v1/worker/gpu_model_runner.py
profile_run :2981-3042, v0.11.2 :4067-4152: `self.encoder_cache["tmp"]`, cleared after `_dummy_sampler_run`), so
they add to both moments:

    encoder cache   N x rows x H x b, beside the forward and the sampler alike
        budget  B = max(max_num_batched_tokens, t): min(max_num_encoder_input_tokens, encoder_cache_size), both
                max_num_batched_tokens (vllm v0.11.2 vllm/config/scheduler.py:212-213), each at least one image's
                t = image_tokens (vllm v0.11.2 vllm/v1/core/encoder_cache_manager.py compute_mm_encoder_budget
                :336-341; v0.10.2 :328-330, v0.12.0 :337-340)
        items   N = max(1, min(B // t, max_num_seqs x max(1, min(L, max_model_len // t)))), L the images a prompt
                may hold (--limit-mm-per-prompt; 999 where not given: vllm v0.11.2 vllm/config/multimodal.py
                get_limit_per_prompt :216-226), chunked prefill on (vllm v0.11.2 vllm/v1/worker/utils.py
                MultiModalBudget.get_max_items :84-127; v0.10.2 and v0.12.0 alike)
        rows    v0.11.0 - v0.11.x: B, every output copied into zeros of the whole encoder budget while it is shorter
                (vllm v0.11.0 gpu_model_runner.py :3369-3388, v0.11.2 :4113-4132; v0.11.1 not read, between
                two that do); v0.12.0: t (:4331-4354, to max_tokens_by_modality); elsewhere the encoder's own rows,
                counted as t (Gemma 3's 256 against t = 260: 2.6 MiB over at 63 images x 5,376 x 2 B; vllm v0.10.2
                :3026, v0.13.0 :4470-4471 store the outputs as they are)
    H is the text model's width (the projector's output: Gemma3MultiModalProjector, vllm v0.11.2 gemma3_mm.py
    :463-505) and b the model's dtype. Gemma 3 27B at v0.11.2 with 16,384 batched tokens: t = 260, N = 63 (the
    log's "profiled with 63 image items"), 63 x 16,384 x 5,376 x 2 B = 10.34 GiB.
    dummy inputs    N x e x b beside them: the N copies of one dummy image's processed input (e elements:
                    ModelSpec.image_input_elements), moved to the GPU in one batch (_get_mm_dummy_batch, v0.11.2
                    :3593-3623; v0.10.2 :2592-2617) and, a local of profile_run, alive until it returns; floating
                    inputs come in the model's dtype (vllm v0.11.2 vllm/multimodal/processing.py
                    _postprocess_output :1024-1036). Gemma 3: 63 x 3 x 896^2 x 2 B = 0.28 GiB.

vLLM skips it where the model takes no images: every supported modality's limit 0 ("running in text-only
mode", vllm v0.11.2 vllm/multimodal/registry.py supports_multimodal_inputs :122-146; EngineSettings.
limit_mm_per_prompt 0), or --skip-mm-profiling (gpu_model_runner.py :4070-4074; EngineSettings.
skip_mm_profiling). Not modelled: the encoder's own forward (before the language model's: 63 SigLIP passes of
4,096 patches for Gemma 3, below the moments above at its defaults), V0's multimodal dummy data, and which stages
hold the cache under pipeline parallelism (each here). Otherwise pass --activation-gib.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cost.layers import layer_walk
from ..specs import ModelSpec
from .settings import Resolved, model_dtype
from .vocab import Accounting, in_span

#: Bytes the sampler keeps alive per (request x vocabulary entry) at its peak (module docstring): V0's and V1's
#: full sort (SORT), and V1's Triton top-k / top-p (and vllm-v0.8, fitted alike); vllm-v0.2 keeps 40.
SORT_BYTES_PER_LOGIT, TRITON_BYTES_PER_LOGIT, V0_2_BYTES_PER_LOGIT = 38, 15, 40
#: FlashInfer's top-k / top-p from logits: the logits, their fp32 copy, the masked copy, the probabilities.
FLASHINFER_BYTES_PER_LOGIT = 2 + 4 + 4 + 4
#: The vLLM V1 releases that sample with FlashInfer by default where it is installed (first, last).
V1_FLASHINFER_SAMPLER_RELEASES = ((0, 9, 1), (0, 11, 0))
#: V1 releases where VLLM_USE_FLASHINFER_SAMPLER=1 samples with FlashInfer (EngineSettings.use_flashinfer_sampler):
#: from v0.9.1, and v0.11.1 on by opt-in (vllm 0.11.2 v1/sample/ops/topk_topp_sampler.py:34, forward_cuda:84-109
#: calling flashinfer_sample, top_k_top_p_sampling_from_logits as in v0.10); from v0.17 the Triton top-k / top-p
#: (not read with the variable set) is kept
V1_FLASHINFER_OPT_IN_RELEASES = ((0, 9, 1), (0, 16))
#: From this vLLM V1 release a processed --logprobs-mode keeps the native sampler (vocab.LogprobsMode).
V1_PROCESSED_LOGPROBS_NATIVE_RELEASE = (0, 10, 2)
#: Below this many rows PyTorch sorts them all at once (segmented_sort_pairs_by_full_sort), at 50 bytes a logit.
FULL_SORT_ROWS, FULL_SORT_BYTES_PER_LOGIT = 128, 50
#: vLLM V1's Triton top-k / top-p: from this release, for at least this many rows (topk_topp_sampler.py).
V1_TRITON_SAMPLER_RELEASE, V1_TRITON_SAMPLER_MIN_ROWS = (0, 17), 8
#: From this vLLM V1 release the fused-MoE caches are WorkspaceManager's kept buffers (modular_kernel.py).
V1_MOE_WORKSPACE_RELEASE = (0, 14)
#: vLLM V1 releases whose profile run copies each dummy encoder output into zeros of the whole encoder budget
#: (first, last; module docstring): vllm v0.11.0 gpu_model_runner.py :3369-3388, v0.11.2 :4113-4132.
V1_ENCODER_BUDGET_EXPANSION_RELEASES = ((0, 11, 0), (0, 11))
#: vLLM's images a prompt may hold where --limit-mm-per-prompt names none (MultiModalConfig.get_limit_per_prompt).
DEFAULT_MM_LIMIT_PER_PROMPT = 999
#: fused_moe processes at most this many tokens at a time (VLLM_FUSED_MOE_CHUNK_SIZE's default, 32 x 1024).
MOE_CHUNK_TOKENS = 32 * 1024


@dataclass(frozen=True)
class ProfileRun:
    """The modelled torch peak of vLLM's profile run above the weights, and its parts (bytes, one GPU)."""

    num_tokens: int
    num_requests: int
    forward_bytes: int
    sampler_bytes: int
    moe_workspace_bytes: int
    moe_workspace_kept: bool
    encoder_cache: EncoderCache | None = None
    sampler_note: str = ""             # which sampler the pass assumes, where the install decides it (sampler_note)

    @property
    def peak_bytes(self) -> int:
        """The larger moment: the forward pass (MoE caches included), or the sampler beside what outlives the
        forward (its output hidden states; V1's MoE caches); V1's dummy encoder outputs beside either."""
        kept = self.moe_workspace_bytes if self.moe_workspace_kept else 0
        held = self.encoder_cache.bytes if self.encoder_cache else 0
        return held + max(self.forward_bytes, self.sampler_bytes + kept)

    def describe(self) -> str:
        part = "sampler" if self.sampler_bytes >= self.forward_bytes else "forward"
        kept = " + the fused-MoE caches V1 keeps" if self.moe_workspace_kept and self.moe_workspace_bytes else ""
        enc = self.encoder_cache
        held = (f" + {enc.items} dummy image outputs of {enc.rows:,} rows held in the encoder cache, and their "
                f"inputs" if enc else "")
        note = f"; {self.sampler_note}" if part == "sampler" and self.sampler_note else ""
        return (f"modelled: the {part} pass of the profile run{kept}{held} ({self.num_tokens:,} tokens over "
                f"{self.num_requests:,} sequences{note})")


@dataclass(frozen=True)
class EncoderCache:
    """vLLM V1's dummy encoder outputs and inputs held through the profile run (module docstring): `items`
    outputs of `rows` x the text width (`output_bytes`) and their processed inputs (`input_bytes`), one GPU."""

    items: int
    rows: int
    output_bytes: int
    input_bytes: int

    @property
    def bytes(self) -> int:
        return self.output_bytes + self.input_bytes


def encoder_cache(model: ModelSpec, s: Resolved) -> EncoderCache | None:
    """The dummy encoder outputs vLLM V1 keeps through its profile run (module docstring), or None where it runs
    none: no image input known (image_tokens 0), another accounting than vllm-v1, an image limit of 0 or
    --skip-mm-profiling."""
    t = model.image_tokens
    if not t or s.accounting is not Accounting.vllm_v1 or s.skip_mm_profiling or s.limit_mm_per_prompt == 0:
        return None
    budget = max(s.max_num_batched_tokens, t)
    limit = DEFAULT_MM_LIMIT_PER_PROMPT if s.limit_mm_per_prompt is None else s.limit_mm_per_prompt
    per_prompt = max(1, min(limit, s.max_model_len // t))
    items = max(1, min(budget // t, s.max_num_seqs * per_prompt))
    expanded = s.release is not None and in_span(s.release, V1_ENCODER_BUDGET_EXPANSION_RELEASES)
    rows = budget if expanded else t
    b = model_dtype(model).bytes
    return EncoderCache(items, rows, items * rows * model.hidden_size * b, items * model.image_input_elements * b)


def profile_run(model: ModelSpec, s: Resolved, last_stage: bool = True) -> ProfileRun:
    """The profile run's activation peak for `model` with the resolved settings (module docstring). A pipeline
    stage before the last runs no sampler (engines/pipeline.py): its peak is the forward pass."""
    tp = s.tensor_parallel
    tokens = s.max_num_batched_tokens
    requests = min(s.max_num_seqs, tokens)
    b = model_dtype(model).bytes
    moe = _moe_elements(model, 1 if s.expert_parallel > 1 else tp) * min(tokens, MOE_CHUNK_TOKENS) * b
    hidden = (requests if s.accounting is Accounting.vllm_v0_8 else tokens) * model.hidden_size * b
    per_logit = sampler_bytes_per_logit(s.accounting, s.release, requests, _flashinfer_may_sample(s),
                                        s.use_flashinfer_sampler)
    sampler = requests * model.vocab_size * per_logit + hidden if last_stage else 0
    forward = forward_bytes(model, s, tokens)
    kept = s.accounting is Accounting.vllm_v1 and (s.release is None or s.release >= V1_MOE_WORKSPACE_RELEASE)
    return ProfileRun(tokens, requests, forward, sampler, moe, moe_workspace_kept=kept,
                      encoder_cache=encoder_cache(model, s), sampler_note=sampler_note(s, per_logit))


def sampler_note(s: Resolved, per_logit: int) -> str:
    """Which sampler the profile's sampler pass assumes where whether FlashInfer is installed decides it (V1 v0.9.1 -
    v0.11.0, or the VLLM_USE_FLASHINFER_SAMPLER releases when it is set): FlashInfer's, assumed installed as vLLM's
    Docker image ships it (a plain `pip install vllm` leaves it out: flashinfer-python is the wheel's `flashinfer`
    extra, vllm 0.11.0 METADATA), or PyTorch's sort of the vocabulary; "" elsewhere (the release decides alone)."""
    span = V1_FLASHINFER_SAMPLER_RELEASES if s.use_flashinfer_sampler is None else V1_FLASHINFER_OPT_IN_RELEASES
    if (s.accounting is not Accounting.vllm_v1 or s.release is None or s.use_flashinfer_sampler is False
            or not in_span(s.release, span)):
        return ""
    if per_logit == FLASHINFER_BYTES_PER_LOGIT:
        return (f"FlashInfer's top-k / top-p sampler ({per_logit} bytes a logit), FlashInfer assumed installed as "
                "vLLM's Docker image ships it: --no-flashinfer where the log says 'FlashInfer is not available'")
    return f"PyTorch's sort of the vocabulary ({per_logit} bytes a logit): no FlashInfer sampler"


def _flashinfer_may_sample(s: Resolved) -> bool:
    """FlashInfer's sampler can run: it is installed on an NVIDIA GPU (Resolved.flashinfer_sampler) and no processed
    --logprobs-mode keeps the native one (from V1_PROCESSED_LOGPROBS_NATIVE_RELEASE; vocab.LogprobsMode)."""
    native = (s.logprobs_mode.processed and s.release is not None
              and tuple(s.release) >= V1_PROCESSED_LOGPROBS_NATIVE_RELEASE)
    return s.flashinfer_sampler and not native


def forward_bytes(model: ModelSpec, s: Resolved, tokens: int, with_moe: bool = True) -> int:
    """The forward moment of a pass over `tokens` tokens (module docstring): the residual stream and the widest
    block's intermediates, or the fused-MoE caches beside the residual stream (`with_moe` False: not them, where
    they are buffers already held)."""
    tp, b = s.tensor_parallel, model_dtype(model).bytes
    per_token = 3 * model.hidden_size + max(_mlp_elements(model, tp), _attention_elements(model, tp))
    if not with_moe:
        return tokens * per_token * b
    moe = _moe_elements(model, 1 if s.expert_parallel > 1 else tp) * min(tokens, MOE_CHUNK_TOKENS) * b
    return max(tokens * per_token * b, tokens * 3 * model.hidden_size * b + moe)


def sampler_bytes_per_logit(accounting: Accounting, release: tuple[int, ...] | None, rows: int,
                            flashinfer: bool = False, opted_in: bool | None = None) -> int:
    """Bytes a logit the profile's sampler holds at its peak over `rows` requests (module docstring): the full sort
    of V0 and of V1 before v0.17 (38; 50 below 128 rows), V1's Triton top-k / top-p from v0.17 for 8 rows or more
    and vllm-v0.8 (15), vllm-v0.2's 40, and FlashInfer's (14) in V1 v0.9.1 - v0.11.0 where `flashinfer` (it is
    installed, on an NVIDIA GPU: settings.Resolved.flashinfer_sampler), unless `opted_in` (VLLM_USE_FLASHINFER_SAMPLER)
    is False; with it True, FlashInfer's in V1 v0.9.1 - v0.16.x (V1_FLASHINFER_OPT_IN_RELEASES). `release` None is the
    accounting's newest."""
    if accounting is Accounting.vllm_v0_2:
        return V0_2_BYTES_PER_LOGIT
    span = V1_FLASHINFER_SAMPLER_RELEASES if opted_in is None else V1_FLASHINFER_OPT_IN_RELEASES
    if (accounting is Accounting.vllm_v1 and flashinfer and opted_in is not False and release is not None
            and in_span(release, span)):
        return FLASHINFER_BYTES_PER_LOGIT
    triton = release is None or release >= V1_TRITON_SAMPLER_RELEASE
    if accounting is Accounting.vllm_v0_8 or (accounting is Accounting.vllm_v1 and triton
                                               and rows >= V1_TRITON_SAMPLER_MIN_ROWS):
        return TRITON_BYTES_PER_LOGIT
    return FULL_SORT_BYTES_PER_LOGIT if rows < FULL_SORT_ROWS else SORT_BYTES_PER_LOGIT


def _mlp_elements(model: ModelSpec, tp: int) -> int:
    """Per token: gate and up (2 F) and their product (F) of the widest dense MLP, split tp ways."""
    dense = (model.dense_ffn_size or model.ffn_size) if model.num_dense_layers else 0
    shared = (model.shared_expert_ffn_size or model.ffn_size) * model.num_shared_experts if model.is_moe else 0
    return 3 * max(dense, shared) // tp


def _moe_elements(model: ModelSpec, tp: int) -> int:
    """Per token: fused_moe's caches, k x (2 F' + F' + H), F' = F / tp (`tp` the experts' TP: 1 under EP); 0 for
    a dense model."""
    if not model.is_moe:
        return 0
    f = model.ffn_size // tp
    return model.num_experts_per_token * (3 * f + model.hidden_size)


def _attention_elements(model: ModelSpec, tp: int) -> int:
    """Per token: q, k, v and the output of the widest layer type, split tp ways (MLA prefill: k and v per head)."""
    widest = 0
    for _, t, _ in layer_walk(model):
        if not t.is_attention:
            continue
        h = t.heads(model.heads)
        kv_heads = h.num_qo_heads if t.is_latent else h.num_kv_heads
        widest = max(widest, h.num_qo_heads * (h.head_dim + h.value_dim) + kv_heads * (h.head_dim + h.value_dim))
    return widest // tp


__all__ = ["DEFAULT_MM_LIMIT_PER_PROMPT", "encoder_cache", "EncoderCache", "FLASHINFER_BYTES_PER_LOGIT",
           "forward_bytes", "FULL_SORT_BYTES_PER_LOGIT", "FULL_SORT_ROWS", "MOE_CHUNK_TOKENS", "profile_run",
           "ProfileRun", "sampler_bytes_per_logit", "sampler_note", "SORT_BYTES_PER_LOGIT", "TRITON_BYTES_PER_LOGIT",
           "V0_2_BYTES_PER_LOGIT", "V1_ENCODER_BUDGET_EXPANSION_RELEASES", "V1_FLASHINFER_OPT_IN_RELEASES",
           "V1_FLASHINFER_SAMPLER_RELEASES", "V1_MOE_WORKSPACE_RELEASE", "V1_TRITON_SAMPLER_MIN_ROWS",
           "V1_TRITON_SAMPLER_RELEASE"]
