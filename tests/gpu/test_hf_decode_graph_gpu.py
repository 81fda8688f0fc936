"""The decode engine on a GPU (skipped without one). Written before its first GPU run.

Tiny random bf16 Llama, Qwen3 (tied embedding), OPT and Mistral models: greedy tokens of the
decode step replayed as one CUDA graph equal the same engine's eager step bit for bit (same
kernels, same order), at r = 0 (the plain all-HBM model) and r = 0.3 (split linears, host KV
sequences, host embedding rows); the offloaded graph engine equals the all-HBM graph engine's
tokens except at near-ties (the split kernels sum in another order); the captured graph replays
on new prompts; ``smemkit offload run`` runs on a tiny config.
"""

from __future__ import annotations

import copy
import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from hf_tiny_models import FOUR_ARCHS, MOE_ARCHS, tiny_configs  # noqa: E402
from hf_tiny_models import tiny as tiny_model  # noqa: E402

from smemkit.cli.main import main  # noqa: E402
from smemkit.offload import decode_engine, offload_model  # noqa: E402

pytestmark = pytest.mark.gpu

CONFIGS = tiny_configs(vocab_size=512, intermediate_size=256, archs=FOUR_ARCHS)
MOE_CONFIGS = tiny_configs(vocab_size=512, intermediate_size=256, archs=MOE_ARCHS)
B, L, T = 8, 8, 32


def tiny(arch):
    return tiny_model(arch, configs=CONFIGS)


def prompt(seed=1):
    return torch.randint(0, 512, (B, L), generator=torch.Generator().manual_seed(seed)).cuda()


def near_tie_parts(ref_tokens, got_tokens, ref_logits) -> int:
    """Sequences that part from the reference; each must part where the reference's top two logits
    are within bf16 noise (0.05 of the logit scale)."""
    parted = 0
    for b in range(B):
        differ = (ref_tokens[b] != got_tokens[b]).nonzero()
        if len(differ):
            s = int(differ[0])
            lg = ref_logits[s][b]
            top2 = lg.topk(2).values
            assert top2[0] - top2[1] <= 0.05 * lg.abs().max() + 1e-3, f"sequence {b} parted at step {s}"
            parted += 1
    return parted


@pytest.mark.parametrize("arch", sorted(CONFIGS))
@pytest.mark.parametrize("ratio", [0.0, 0.3])
def test_graph_equals_eager_and_all_hbm(arch, ratio):
    model = tiny(arch)
    ids = prompt()
    hbm = decode_engine(copy.deepcopy(model).cuda(), batch=B, max_seq_len=L + T)
    ref_eager = hbm.generate(ids, T, graph=False)
    ref, ref_logits = hbm.generate(ids, T, graph=True, keep_logits=True)
    assert torch.equal(ref, ref_eager)
    if ratio == 0.0:
        return
    off = offload_model(model, ratio=ratio, batch=B, max_seq_len=L + T)
    assert max(off.kv_cache.host_seqs) > 0
    eager = off.generate(ids, max_new_tokens=T, graph=False)
    graph = off.generate(ids, max_new_tokens=T, graph=True)
    assert torch.equal(graph, eager)
    parted = near_tie_parts(ref[:, L:], graph[:, L:], ref_logits)
    print(f"{arch} r={ratio}: {parted} of {B} sequences parted from the all-HBM engine at near-ties")
    again = off.generate(prompt(7), max_new_tokens=T, graph=True)  # replayed on new inputs
    assert torch.equal(again, off.generate(prompt(7), max_new_tokens=T, graph=False))
    assert not torch.equal(again, graph)
    off.free()


@pytest.mark.parametrize("arch", MOE_ARCHS)
def test_moe_decode_step_is_one_graph_reading_routed_experts(arch):
    """A MoE model's step captures (transformers' eager experts synchronise on the routing, so the
    all-HBM reference is the same module at r = 0): graph equals eager bit for bit at r = 0 and
    r = 0.5 (half the experts in host memory), and r = 0.5 parts from r = 0 only at near-ties."""
    model = tiny_model(arch, configs=MOE_CONFIGS)
    ids = prompt()
    hbm = offload_model(copy.deepcopy(model), ratio=0.0, batch=B, max_seq_len=L + T, host_path="direct")
    ref_eager = hbm.generate(ids, max_new_tokens=T, graph=False)
    ref, ref_logits = hbm.engine().generate(ids, T, graph=True, keep_logits=True)
    assert torch.equal(ref, ref_eager)
    off = offload_model(model, ratio=0.5, batch=B, max_seq_len=L + T)
    assert all(s.host_experts == 2 for s in off.layout.experts)
    eager = off.generate(ids, max_new_tokens=T, graph=False)
    graph = off.generate(ids, max_new_tokens=T, graph=True)
    assert torch.equal(graph, eager)
    parted = near_tie_parts(ref[:, L:], graph[:, L:], ref_logits)
    print(f"{arch} r=0.5: {parted} of {B} sequences parted from r = 0 at near-ties")
    again = off.generate(prompt(7), max_new_tokens=T, graph=True)
    assert torch.equal(again, off.generate(prompt(7), max_new_tokens=T, graph=False))


def test_cli_run_on_a_tiny_config(tmp_path, capsys):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIGS["llama"]().to_dict()))
    assert (
        main(
            [
                "offload",
                "run",
                "--model",
                str(cfg),
                "--ratio",
                "0.3",
                "--batch",
                "4",
                "--prompt",
                "8",
                "--gen",
                "12",
                "--compare",
                "hbm",
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["tpot_median_ms"] > 0 and report["pinned_bytes"] > 0 and report["host_bytes_per_step"] > 0
    assert "hbm" in report["compare"] and report["compare"]["hbm"]["tpot_median_ms"] > 0
