"""Offloaded Hugging Face models on a GPU (skipped without one).

Tiny random Llama, Qwen3 (tied embedding), OPT (biases, tied), Mistral, Mixtral and Qwen3-MoE (4
experts, 2 per token) models in bf16: the model offloaded by ``offload_model``
(``OffloadedLinear`` weights with ``host_path="direct"``, or host rows staged a layer ahead with
``"prefetch"``; whole experts, KV sequences and embedding rows in pinned memory) or built by
``load_offloaded`` from a checkpoint written here, against the same model all in HBM (for MoE
models, with the same experts kernel: see ``kernel_experts``), 32 greedy tokens each. The split
kernels add in another order than cuBLAS, so logits may differ in their last bf16 bits; tokens
must be equal except where a sequence parts from the reference at a near-tie: a step where the
reference's own logits put the two tokens closer than that step's measured logit error. Every step
up to there must agree within bf16 tolerance. Then the HBM the offloaded model takes, and the fit
errors before anything moves.
"""

from __future__ import annotations

import copy
import gc

import pytest
import torch
from torch import nn

transformers = pytest.importorskip("transformers")

from hf_tiny_models import FOUR_ARCHS, MOE_ARCHS, tiny_configs  # noqa: E402
from hf_tiny_models import tiny as tiny_model  # noqa: E402

from smemkit.offload import OffloadedLinear, OffloadFitError, load_offloaded, offload_model  # noqa: E402
from smemkit.offload.experts import OffloadedExperts, place_experts  # noqa: E402
from smemkit.offload.hf_layout import FIXED_WORKSPACE_BYTES, op_of_linear  # noqa: E402
from smemkit.offload.hf_model import plan_layout  # noqa: E402
from smemkit.offload.placement import GpuPlacement  # noqa: E402
from smemkit.offload.prefetch import TwoPartLinear  # noqa: E402

pytestmark = pytest.mark.gpu

VOCAB = 512
CONFIGS = tiny_configs(vocab_size=VOCAB, intermediate_size=256, archs=FOUR_ARCHS + MOE_ARCHS)
BATCH, PROMPT, NEW = 8, 8, 32
MAX_SEQ = PROMPT + NEW
RTOL, ATOL = 2e-2, 1e-3  # per step: max |logit error| <= ATOL + RTOL * max |reference logit|


def settled_memory() -> int:
    """Allocated HBM once earlier tests' objects are gone (a collection could free them mid-test)."""
    gc.collect()
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated()


def tiny(arch: str) -> nn.Module:
    return tiny_model(arch, configs=CONFIGS)


def prompts() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB, (BATCH, PROMPT), generator=g).cuda()


def run_greedy(generate, ids):
    return generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                    do_sample=False, output_logits=True, return_dict_in_generate=True)


def assert_greedy_matches(ref, got) -> int:
    """Compare two greedy runs as the module docstring says; returns how many sequences parted."""
    ref_tokens, got_tokens = ref.sequences[:, PROMPT:], got.sequences[:, PROMPT:]
    ref_logits = torch.stack(ref.logits, 1).float()
    got_logits = torch.stack(got.logits, 1).float()
    assert ref_tokens.shape == got_tokens.shape == (BATCH, NEW)
    parted = 0
    for b in range(BATCH):
        differ = (ref_tokens[b] != got_tokens[b]).nonzero()
        stop = int(differ[0]) if len(differ) else NEW
        steps = min(stop + 1, NEW)  # the logits of step `stop` still follow an identical prefix
        r, g = ref_logits[b, :steps], got_logits[b, :steps]
        err = (g - r).abs().amax(-1)
        bound = ATOL + RTOL * r.abs().amax(-1)
        assert (err <= bound).all(), f"sequence {b}: logit error {err.max():.4g} exceeds {bound.min():.4g}"
        if stop < NEW:
            margin = r[stop, ref_tokens[b, stop]] - r[stop, got_tokens[b, stop]]
            assert margin <= 2 * err[stop] + 1e-6, (
                f"sequence {b} parts from the reference at step {stop} although the reference preferred "
                f"its token by {margin:.4g}, more than twice the step's logit error {err[stop]:.4g}")
            parted += 1
    return parted


def kernel_experts(model: nn.Module) -> nn.Module:
    """``model`` with each experts module replaced by ``OffloadedExperts`` holding every expert in
    HBM: the MoE reference. A router is discontinuous, so an expert sum rounded another way
    (transformers' eager experts round each expert's share to bf16 before adding) can flip a
    near-tied routing and move the logits far past bf16 tolerance; with the same experts kernel
    on both sides only the split linears differ, as for the dense models."""
    placement = GpuPlacement()
    for name, module in list(model.named_modules()):
        if hasattr(module, "gate_up_proj"):
            parent, _, leaf = name.rpartition(".")
            experts = place_experts(placement, module.gate_up_proj.data, module.down_proj.data, 0,
                                    module.act_fn, module.gate_up_proj.dtype)
            setattr(model.get_submodule(parent), leaf, experts)
    return model


def assert_offloaded(off, ratio: float | None) -> None:
    for split in off.layout.linears:
        module = off.model.get_submodule(split.name)
        if off.prefetcher is None:
            assert isinstance(module, OffloadedLinear), split.name
            assert module.split_weight.host_rows == split.host_rows > 0
            assert module.split_weight.host.is_pinned()
        else:  # staged: HBM rows in place, host rows read from a staging slot
            assert isinstance(module, TwoPartLinear), split.name
            assert module.host.shape[0] == split.host_rows > 0 and module.host.is_cuda
            assert module.hbm.shape[0] == split.out_features - split.host_rows
    if off.prefetcher is not None:
        assert off.layout.staging_bytes == off.prefetcher.staging_bytes > 0
        assert all(src.is_pinned() for u in off.prefetcher.units for src, _ in u.copies)
    assert not any(isinstance(m, nn.Linear) for n, m in off.model.named_modules() if op_of_linear(n))
    for split in off.layout.experts:  # whole experts, rounded once across the layers
        module = off.model.get_submodule(split.name)
        assert isinstance(module, OffloadedExperts), split.name
        assert module.host_experts == split.host_experts
        assert module.host_experts == 0 or module.gate_up_host.is_pinned()
        assert module.gate_up_hbm.is_cuda and module.uses_kernel(BATCH * 2)  # decode: moe_gemv
    assert not off.layout.experts or sum(s.host_experts for s in off.layout.experts) > 0
    layer = off.kv_cache.layers[0]
    assert layer.k_hbm.is_cuda
    if ratio is not None:
        assert layer.split.host_seqs == round(ratio * BATCH)
    if layer.split.host_seqs:
        assert layer.k_host.is_pinned()


@pytest.mark.parametrize("arch", sorted(CONFIGS))
@pytest.mark.parametrize("ratio", [0.1, 0.5])
@pytest.mark.parametrize("host_path", ["prefetch", "direct"])
def test_generate_matches_the_all_hbm_model(arch, ratio, host_path):
    cpu_model = tiny(arch)
    ref = copy.deepcopy(cpu_model).cuda()
    if arch in MOE_ARCHS:
        ref = kernel_experts(ref)
    ids = prompts()
    want = run_greedy(ref.generate, ids)
    model = cpu_model if ratio < 0.5 else cpu_model.cuda()  # offload from host memory, and from HBM
    before = settled_memory()
    off = offload_model(model, ratio=ratio, batch=BATCH, max_seq_len=MAX_SEQ, host_path=host_path)
    torch.cuda.synchronize()
    assert_offloaded(off, ratio)
    if ratio < 0.5:  # the model came from host memory: HBM grew by what the layout says, plus workspaces
        grown = torch.cuda.memory_allocated() - before
        held = off.hbm_bytes + off.layout.staging_bytes
        assert held <= grown <= held + FIXED_WORKSPACE_BYTES
    got = run_greedy(off.generate, ids)
    parted = assert_greedy_matches(want, got)
    print(f"{arch} r={ratio}: {parted} of {BATCH} sequences parted at a near-tie")
    again = run_greedy(off.generate, ids)  # the cache is emptied between calls
    assert torch.equal(again.sequences, got.sequences)
    off.free()


@pytest.mark.parametrize(("arch", "mode", "host_path"),
                         [("llama", "ratio", "direct"), ("opt", "budget", "direct"),
                          ("qwen3", "ratio", "prefetch"), ("mixtral", "ratio", "prefetch"),
                          ("qwen3_moe", "budget", "direct")])
def test_loader_builds_the_offloaded_model_from_a_checkpoint(tmp_path, arch, mode, host_path):
    cpu_model = tiny(arch)
    cpu_model.save_pretrained(tmp_path, safe_serialization=True)
    state = {k: v.clone() for k, v in cpu_model.state_dict().items()}
    options, budget = dict(ratio=0.5), None
    if mode == "budget":  # half of the planned bytes fit beside what must stay in HBM
        full = plan_layout(cpu_model, ratio=0.0, batch=BATCH, max_seq_len=MAX_SEQ)
        planned = full.weight_hbm_bytes + full.kv_hbm_bytes
        budget = full.other_hbm_bytes + full.workspace_bytes + planned // 2
        options = dict(gpu_mem_gib=budget / 2**30)
    ref = cpu_model.cuda()
    if arch in MOE_ARCHS:
        ref = kernel_experts(ref)
    before = settled_memory()
    off = load_offloaded(tmp_path, batch=BATCH, max_seq_len=MAX_SEQ, host_path=host_path, **options)
    torch.cuda.synchronize()
    grown = torch.cuda.memory_allocated() - before
    held = off.hbm_bytes + off.layout.staging_bytes
    assert held <= grown <= held + FIXED_WORKSPACE_BYTES
    if budget is not None:
        assert held + off.workspace_bytes <= budget and grown <= budget
    assert_offloaded(off, 0.5 if mode == "ratio" else None)
    for split in off.layout.linears:
        weight = state.get(f"{split.name}.weight")
        if weight is None:  # a tied LM head is stored under the embedding's name
            weight = next(v for k, v in state.items() if k.endswith("embed_tokens.weight"))
        module = off.model.get_submodule(split.name)
        if off.prefetcher is None:
            assert torch.equal(module.split_weight.to_dense().cpu(), weight)
        else:  # the host rows live in the staged sources; the tokens below check them
            assert torch.equal(module.hbm.cpu(), weight[: module.hbm.shape[0]])
    ids = prompts()
    assert_greedy_matches(run_greedy(ref.generate, ids), run_greedy(off.generate, ids))
    off.free()


def test_fit_errors_come_before_anything_moves(monkeypatch):
    model = tiny("llama")
    before = settled_memory()
    with pytest.raises(OffloadFitError, match="GPU budget.*missing"):
        offload_model(model, gpu_mem_gib=1e-5, batch=BATCH, max_seq_len=MAX_SEQ)
    monkeypatch.setattr(GpuPlacement, "pinned_free_bytes", lambda self: 1000)
    with pytest.raises(OffloadFitError, match="pinned host memory.*missing"):
        offload_model(model, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ)
    monkeypatch.setattr(GpuPlacement, "hbm_free_bytes", lambda self: 0)
    with pytest.raises(OffloadFitError, match="free HBM.*missing"):
        offload_model(model, ratio=0.0, batch=BATCH, max_seq_len=MAX_SEQ)
    assert torch.cuda.memory_allocated() == before
    assert all(isinstance(m, nn.Linear) for n, m in model.named_modules() if op_of_linear(n))
    assert all(p.device.type == "cpu" for p in model.parameters())
