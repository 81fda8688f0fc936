"""Prototype (not shipped, not yet measured): DAK-style direct access for the large-batch split
linear. The host rows' GEMM reads the pinned rows in place (UVA) on a few SMs, while cuBLAS runs
the HBM rows on the rest (``torch._C._set_sm_carveout_experimental``), instead of the ring's
copy-then-GEMM whose last chunk GEMM (26-43 us) follows its copy at r_hide.

Why it could meet "batch 512 at r <= r_hide within 5 % of all-HBM cuBLAS": at 4096x14336, batch
512, r_hide (3.5 %: 4 MB on the host), the host rows' FLOPs are 3.5 % of the GEMM. On H = 4 SMs:
cuBLAS on 128 of 132 SMs ~ 89 x 132 / 128 = 92 us; the host program streams 4 MB at the 4-SM
load rate (43.5 GB/s, host_paths/) ~ 92 us and computes 2.1 GFLOP at ~5 TFLOP/s per SM ~ 100 us
overlapped: about 1.03-1.12x cuBLAS, against the ring's 1.13x. Whether cuBLAS keeps its speed
under a carveout, and whether Triton's pipelined loads (cp.async) from host memory reach the
link, is what the next device call measures (``z2.py``).

Each program owns whole output column tiles over all batch rows (BLOCK_M >= batch, up to 512),
so every host byte crosses the link once (host memory is not cached in L2: DAK's read
amplification).

Compiled for sm_90 without a GPU (triton 3.6, strides divisible by 16 as the JIT specializes them):
BLOCK 512 x 32 x 64, 8 warps, 3 stages: wgmma, a cp.async pipeline, 204 KB shared, 203 registers,
no stack; BLOCK_N 64: 254 registers; 4 warps spill 600 B (cuobjdump -res-usage).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def host_rows_gemm_kernel(X, W, Y, B, NH, K, stride_x, stride_w, stride_y, ROUNDS,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Y[:, t*BLOCK_N : (t+1)*BLOCK_N] = X @ W[t-th column tile].T for t = pid + i * programs,
    i < ROUNDS (a tile past the last is all masked)."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    for i in range(0, ROUNDS):
        n0 = (pid + i * programs) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            kk = k0 + ks
            x = tl.load(X + rows[:, None] * stride_x + kk[None, :],
                        mask=(rows[:, None] < B) & (kk[None, :] < K), other=0.0)
            w = tl.load(W + (n0 + cols)[:, None] * stride_w + kk[None, :],
                        mask=((n0 + cols)[:, None] < NH) & (kk[None, :] < K), other=0.0)
            acc = tl.dot(x, tl.trans(w), acc)
        y = acc.to(Y.dtype.element_ty)
        tl.store(Y + rows[:, None] * stride_y + (n0 + cols)[None, :], y,
                 mask=(rows[:, None] < B) & ((n0 + cols)[None, :] < NH))


@triton.jit
def host_rows_gemm_tma_kernel(x_desc, w_desc, Y, B, NH, K, stride_y, ROUNDS,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """host_rows_gemm_kernel with X and W tiles brought in by TMA (tensor descriptors made on the
    host: the W descriptor's base is the pinned rows' device address). DAK reads host tiles this
    way; host_paths/ measured TMA 2-D tiles at the link's rate from 1-2 CTAs (loads need ~8)."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    for i in range(0, ROUNDS):
        n0 = (pid + i * programs) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            x = x_desc.load([0, k0])
            w = w_desc.load([n0, k0])
            acc = tl.dot(x, tl.trans(w), acc)
        tl.store(Y + rows[:, None] * stride_y + (n0 + cols)[None, :], acc.to(Y.dtype.element_ty),
                 mask=(rows[:, None] < B) & ((n0 + cols)[None, :] < NH))


def host_rows_gemm_tma(x, w_host, y_host_cols, programs: int, block_n: int = 32, block_k: int = 64,
                       num_warps: int = 8, num_stages: int = 3) -> None:
    """host_rows_gemm through TMA descriptors (out-of-bounds tile parts read as zeros)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    B, K = x.shape
    NH = w_host.shape[0]
    if B > 512:
        raise ValueError("the prototype holds the whole batch in one tile: B <= 512")
    block_m = max(64, triton.next_power_of_2(B))
    rounds = triton.cdiv(triton.cdiv(NH, block_n), programs)
    x_desc = TensorDescriptor.from_tensor(x, [block_m, block_k])
    w_desc = TensorDescriptor.from_tensor(w_host, [block_n, block_k])
    host_rows_gemm_tma_kernel[(programs,)](x_desc, w_desc, y_host_cols, B, NH, K, y_host_cols.stride(0),
                                           rounds, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                           num_warps=num_warps, num_stages=num_stages)


def host_rows_gemm(x, w_host, y_host_cols, programs: int, block_n: int = 32, block_k: int = 64,
                   num_warps: int = 8, num_stages: int = 3) -> None:
    """y_host_cols (B, NH), a column slice of the output, = x (B, K) @ w_host (NH, K).T, with
    ``programs`` CTAs. ``w_host`` may be a CUDA view of pinned host memory."""
    B, K = x.shape
    NH = w_host.shape[0]
    if B > 512:
        raise ValueError("the prototype holds the whole batch in one tile: B <= 512")
    block_m = max(16, triton.next_power_of_2(B))
    rounds = triton.cdiv(triton.cdiv(NH, block_n), programs)
    host_rows_gemm_kernel[(programs,)](x, w_host, y_host_cols, B, NH, K, x.stride(0), w_host.stride(0),
                                       y_host_cols.stride(0), rounds, BLOCK_M=block_m, BLOCK_N=block_n,
                                       BLOCK_K=block_k, num_warps=num_warps, num_stages=num_stages)


@triton.jit
def host_rows_gemm_splitk_kernel(X, W, P, B, NH, K, stride_x, stride_w, KCHUNK, ITEMS, SPLITS,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Split-K: work item (tile t, split s) writes P[s, :, t-th column tile] = X[:, s-th k chunk] @
    W[t-th tile, s-th chunk].T in fp32; program pid takes items pid, pid + programs, ..."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    for item in range(pid, ITEMS, programs):
        t = item // SPLITS
        s = item % SPLITS
        n0 = t * BLOCK_N
        kb = s * KCHUNK
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, KCHUNK, BLOCK_K):
            kk = kb + k0 + ks
            x = tl.load(X + rows[:, None] * stride_x + kk[None, :],
                        mask=(rows[:, None] < B) & (kk[None, :] < K), other=0.0)
            w = tl.load(W + (n0 + cols)[:, None] * stride_w + kk[None, :],
                        mask=((n0 + cols)[:, None] < NH) & (kk[None, :] < K), other=0.0)
            acc = tl.dot(x, tl.trans(w), acc)
        tl.store(P + s * B * NH + rows[:, None] * NH + (n0 + cols)[None, :], acc,
                 mask=(rows[:, None] < B) & ((n0 + cols)[None, :] < NH))


def splitk_plan(B: int, NH: int, K: int, programs: int, block_n: int, block_k: int,
                items_per_program: int = 1) -> tuple[int, int, int]:
    """(splits, k chunk, items): about ``items_per_program`` items per program, chunks whole
    BLOCK_K multiples."""
    tiles = triton.cdiv(NH, block_n)
    splits = max(1, triton.cdiv(programs * items_per_program, tiles))
    chunk = triton.cdiv(triton.cdiv(K, splits), block_k) * block_k
    splits = triton.cdiv(K, chunk)
    return splits, chunk, tiles * splits


def host_rows_gemm_splitk(x, w_host, y_host_cols, programs: int, block_n: int = 64, block_k: int = 64,
                          num_warps: int = 8, num_stages: int = 3, items_per_program: int = 1,
                          workspace=None):
    """y_host_cols = x @ w_host.T by split-K items over ``programs`` CTAs, partials summed in a
    fixed order (deterministic). ``workspace``: an fp32 buffer of at least splits*B*NH elements."""
    import torch

    B, K = x.shape
    NH = w_host.shape[0]
    if B > 512:
        raise ValueError("the prototype holds the whole batch in one tile: B <= 512")
    block_m = max(16, triton.next_power_of_2(B))
    splits, chunk, items = splitk_plan(B, NH, K, programs, block_n, block_k, items_per_program)
    need = splits * B * NH
    if workspace is None or workspace.numel() < need:
        workspace = torch.empty(need, dtype=torch.float32, device=x.device)
    part = workspace[:need].view(splits, B, NH)
    host_rows_gemm_splitk_kernel[(programs,)](x, w_host, part, B, NH, K, x.stride(0), w_host.stride(0),
                                              chunk, items, splits, BLOCK_M=block_m, BLOCK_N=block_n,
                                              BLOCK_K=block_k, num_warps=num_warps, num_stages=num_stages)
    y_host_cols.copy_(part.sum(0))


if __name__ == "__main__":  # CPU check under the interpreter: TRITON_INTERPRET=1 python direct_gemm.py
    import torch
    from triton.runtime import interpreter

    _orig = interpreter._patch_lang_tensor  # NumPy >= 2.4 shim, as tests/cpu/test_triton_kernels.py

    def _patched(tensor, scope):
        _orig(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = _patched

    torch.manual_seed(0)
    for B, NH, K, programs in ((5, 40, 96, 2), (64, 64, 128, 2), (33, 17, 70, 1), (3, 50, 64, 3)):
        x = torch.randn(B, K, dtype=torch.float16)
        w = torch.randn(NH, K, dtype=torch.float16)
        out = torch.full((B, NH + 7), float("nan"), dtype=torch.float16)
        host_rows_gemm(x, w, out[:, 7:], programs, block_n=16, block_k=32, num_warps=4, num_stages=1)
        want = x.double() @ w.double().T
        err = float((out[:, 7:].double() - want).norm() / want.norm())
        assert torch.isnan(out[:, :7]).all(), "wrote outside its columns"
        print(f"B={B} NH={NH} K={K} programs={programs}: rel err {err:.2e}")
        assert err < 2e-3
        if K % 8 == 0:  # TMA rows must be 16-byte aligned
            out.fill_(float("nan"))
            host_rows_gemm_tma(x, w, out[:, 7:], programs, block_n=16, block_k=32, num_warps=4, num_stages=1)
            err = float((out[:, 7:].double() - want).norm() / want.norm())
            assert torch.isnan(out[:, :7]).all(), "wrote outside its columns"
            print(f"  TMA: rel err {err:.2e}")
            assert err < 2e-3
        for ipp in (1, 3):
            out.fill_(float("nan"))
            host_rows_gemm_splitk(x, w, out[:, 7:], programs, block_n=16, block_k=32, num_warps=4,
                                  num_stages=1, items_per_program=ipp)
            err = float((out[:, 7:].double() - want).norm() / want.norm())
            assert torch.isnan(out[:, :7]).all(), "wrote outside its columns"
            print(f"  split-K x{ipp}: rel err {err:.2e} plan {splitk_plan(B, NH, K, programs, 16, 32, ipp)}")
            assert err < 2e-3
