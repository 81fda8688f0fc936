"""The UVA and layer-prefetch baselines on a GPU (skipped without one).

Tiny random bf16 Llama, Qwen2 (q/k/v bias) and OPT models, 30 % of every linear's rows in host
memory as the uniform plan splits them: the decode step replayed as a CUDA graph gives the eager
step's tokens bit for bit; the prefetcher (host rows staged into HBM slots) and UVA (host rows
read in place) run the same GEMMs on the same bytes, so their logits agree bit for bit at every
step, which fails if a stale or half-copied staging slot is ever read; both stay within bf16
rounding of the plain model's logits.
"""

from __future__ import annotations

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers")

from hf_tiny_models import tiny as tiny_model  # noqa: E402
from hf_tiny_models import tiny_configs  # noqa: E402

from smemkit.offload import decode_engine  # noqa: E402
from smemkit.offload.baselines import prefetch_offload, uva_offload  # noqa: E402
from smemkit.offload.hf_model import plan_layout  # noqa: E402

pytestmark = pytest.mark.gpu

CONFIGS = tiny_configs(vocab_size=512, intermediate_size=256, archs=("llama", "qwen2", "opt"))
B, L, T = 8, 8, 24
RATIO = 0.3


def prompt(seed=1):
    return torch.randint(0, 512, (B, L), generator=torch.Generator().manual_seed(seed)).cuda()


def rel(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm())


@pytest.mark.parametrize("arch", sorted(CONFIGS))
def test_prefetch_and_uva_agree_and_match_the_plain_model(arch):
    model = tiny_model(arch, configs=CONFIGS)
    layout = plan_layout(model, ratio=RATIO, plan="uniform", batch=B, max_seq_len=L + T, offload_kv=False)
    assert layout.weight_host_bytes > 0
    plain = decode_engine(copy.deepcopy(model).cuda(), batch=B, max_seq_len=L + T)
    ref, ref_logits = plain.generate(prompt(), T, graph=True, keep_logits=True)

    runs = {}
    holders = []
    for name, make in (("uva", uva_offload), ("prefetch", prefetch_offload)):
        m = copy.deepcopy(model).cuda()
        holders.append(make(m, layout))
        engine = decode_engine(m, batch=B, max_seq_len=L + T)
        eager, eager_logits = engine.generate(prompt(), T, graph=False, keep_logits=True)
        graph, graph_logits = engine.generate(prompt(), T, graph=True, keep_logits=True)
        assert torch.equal(graph, eager), name
        for a, b in zip(graph_logits, eager_logits, strict=True):
            assert torch.equal(a, b), name
        again = engine.generate(prompt(7), T, graph=True)  # replayed on new inputs
        assert torch.equal(again, engine.generate(prompt(7), T, graph=False)), name
        assert rel(graph_logits[0], ref_logits[0]) < 2e-2, name  # the prefill: same inputs as the plain model
        runs[name] = (graph, graph_logits)
    assert torch.equal(runs["prefetch"][0], runs["uva"][0])
    for a, b in zip(runs["prefetch"][1], runs["uva"][1], strict=True):
        assert torch.equal(a, b)
    prefetcher = holders[1]
    assert prefetcher.host_bytes == layout.weight_host_bytes
    assert len(prefetcher.slots) == 3  # 2 layers + the LM head: an odd count
    for h in holders:
        h.free()


def test_prefetch_recovers_when_a_forward_stops_before_the_lm_head():
    """A base-model call (no LM head) leaves the prefetcher mid-cycle; the next forward must copy
    its first layer's block again rather than read whatever the slot holds (5 layers + the head:
    slot 0 is rewritten by layer 2's and layer 4's blocks)."""
    from smemkit.offload import offload_model

    config = CONFIGS["llama"]()
    config.num_hidden_layers = 5
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    off = offload_model(model, ratio=RATIO, batch=B, max_seq_len=L + T, host_path="prefetch")
    assert len(off.prefetcher.units) == 6
    engine = off.engine()
    want = engine.generate(prompt(), T, graph=False)
    with torch.no_grad():
        off.model.model(input_ids=prompt(3))  # layers only: the LM head's pre-hook never runs
    assert torch.equal(engine.generate(prompt(), T, graph=False), want)
    assert torch.equal(engine.generate(prompt(), T, graph=True), want)
    off.free()
