#!/usr/bin/env python3
"""Train a small Wan-style DiT with zellige in PyTorch (docs/pytorch.md, "The training example").

Every step, on every rank:

1. **Data.** A seeded mixed image/video batch: each loader rank draws its own samples (images of
   1 latent frame, videos of 2-8 frames) until it holds about ``--tokens-per-rank`` tokens, and
   makes only its own samples' latents. The batch is the same whatever the policy or world size
   it runs under, given ``--world-size`` (the number of loader ranks).
2. **Plan.** ``zellige.Planner(model, cluster, policy=...)`` places the batch (``--policy``
   ``zellige``, ``knapformer``, ``usp`` or ``dp``). Step t+1's batch is planned on the planner's
   background thread while step t trains (the C call releases the GIL); ``plan wait`` in the log
   is how long the step then waited for its plan.
3. **Train.** ``zellige.torch.Executor(plan)`` moves the noisy latents and their 3D positions
   (frame, row, col) plus sample index from the loader layout to the plan layout in one
   ``dispatch``; every token-wise layer runs on this rank's plan-layout tokens; self-attention
   is ``ex.attention`` (whole sequences, Ulysses, ring and all-gather shards of different
   sequences together); the prediction goes back with ``undispatch`` and the rectified-flow loss
   is taken in the loader layout, normalised by the *global* token count. Gradients of the
   replicated weights are summed over ranks with one all-reduce, then AdamW steps. The loss is
   the loss one process computes on the whole batch (``--reference`` runs that process).

Rank 0 prints per step: loss, step time (slowest and fastest rank), the plan's predicted makespan
and the measured one (the slowest rank's forward+backward time), and the plan wait.

Run::

    torchrun --nproc-per-node 4 examples/train_dit.py --steps 5 --policy zellige
    torchrun --nproc-per-node 4 examples/train_dit.py --steps 5 --policy zellige,dp,usp,knapformer
    torchrun --nproc-per-node 1 examples/train_dit.py --steps 3 --device cuda   # NCCL, GPU 0
    python3 examples/train_dit.py --reference --world-size 4 --steps 5   # one process, same losses

``--policy`` takes a comma list: each policy trains its own model from the same seed on the
same batches, so the losses of one step agree across policies (placement does not change the
math) and the step times compare the placements on the same minutes of the machine.

``--compile`` runs the model through ``torch.compile`` (``dynamic=False``). Every step's plan
puts a different number of tokens on a rank, so the Executor is made with ``capacity_tokens``
(``--capacity-tokens``, by default the power of two above the most any rank holds, raised only
when a plan needs more) and the per-sample conditioning is padded to a fixed row count: the
compiled graphs keep their shapes from step to step and are not recompiled. The log reports the
graphs dynamo compiled so far (``graphs``; the largest over ranks)::

    torchrun --nproc-per-node 4 examples/train_dit.py --steps 5 --compile
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - needs an interpreter without torch
    print("train_dit.py: needs PyTorch (python3 -m pip install torch)", file=sys.stderr)
    sys.exit(2)

POLICIES = ("zellige", "knapformer", "usp", "dp")
#: an attention function: q, k, v (T, H, D) in one layout -> o (T, H, D)
AttnFn = Callable[["torch.Tensor", "torch.Tensor", "torch.Tensor"], "torch.Tensor"]


# ---------------------------------------------------------------------------------------------
# Configuration and arguments


@dataclass(frozen=True)
class ModelConfig:
    """The DiT's sizes (the planner gets the same ones, :meth:`planner_model`)."""

    dim: int = 64           # model width
    heads: int = 4          # attention heads (head_dim = dim / heads)
    layers: int = 2         # transformer blocks
    ffn: int = 128          # MLP hidden width
    channels: int = 8       # latent channels per token (the patchified latent)
    text_dim: int = 16      # caption embedding width (one vector per sample)
    freq_dim: int = 32      # sinusoidal timestep embedding width

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    def planner_model(self) -> Dict[str, object]:
        """The model JSON (docs/formats.md §5) the planner prices: a Wan-style DiT of these
        sizes, without cross-attention."""
        return {"preset": "tiny", "name": "train_dit", "arch": "wan", "dim": self.dim,
                "n_heads": self.heads, "n_layers": self.layers, "ffn_dim": self.ffn,
                "in_channels": self.channels, "text_dim": self.text_dim,
                "freq_dim": self.freq_dim, "cross_attn": 0}


def _positive(name: str) -> Callable[[str], int]:
    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: {s!r} is not an integer") from None
        if v < 1:
            raise argparse.ArgumentTypeError(f"{name}: {v} must be at least 1")
        return v
    return parse


def _fraction(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{v} is outside 0..1")
    return v


def _capacity(s: str) -> object:
    if s in ("auto", "pow2", "exact"):
        return s
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{s!r}: expected a token count, pow2, auto or exact") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} must be at least 1")
    return v


def _policies(s: str) -> List[str]:
    out = [p.strip() for p in s.split(",") if p.strip()]
    bad = [p for p in out if p not in POLICIES]
    if bad or not out:
        raise argparse.ArgumentTypeError(
            f"unknown policy {bad[0] if bad else s!r}; expected one of {', '.join(POLICIES)} "
            "or a comma list of them (zellige,dp)")
    if len(set(out)) != len(out):
        raise argparse.ArgumentTypeError(f"policy list {s!r} names one policy twice")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="train_dit.py",
        description="Train a small Wan-style DiT (3D RoPE, adaLN, MLP) with zellige plans in "
                    "PyTorch: run under torchrun (gloo on CPU), or --reference in one process.",
        epilog="examples:\n"
               "  torchrun --nproc-per-node 4 examples/train_dit.py --steps 5 --policy zellige\n"
               "  torchrun --nproc-per-node 4 examples/train_dit.py --policy zellige,dp --json\n"
               "  python3 examples/train_dit.py --reference --world-size 4 --steps 5",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=_positive("--steps"), default=5, help="training steps (5)")
    p.add_argument("--policy", type=_policies, default=["zellige"],
                   help="placement policy: zellige, knapformer, usp or dp, or a comma list "
                        "(each trains its own model from the same seed) (zellige)")
    p.add_argument("--reference", action="store_true",
                   help="one process, no torch.distributed: the same model and batches, each "
                        "sequence attended whole; prints the losses the distributed run must "
                        "match")
    p.add_argument("--world-size", type=_positive("--world-size"), default=None,
                   help="loader ranks the batch stream is drawn for (default: the torchrun "
                        "world size; with --reference: 4)")
    p.add_argument("--cluster", default=None,
                   help="cluster the planner prices: a preset, NxGPU (4xA800) or cpu:N; it "
                        "must have the world size's ranks (default cpu:WORLD)")
    p.add_argument("--profile", default=None,
                   help="a price table from `zellige profile` (default: analytic prices)")
    p.add_argument("--api", choices=("auto", "executor", "balancer"), default="auto",
                   help="executor: zellige.Planner + zellige.torch.Executor; balancer: "
                        "zellige.torch.Balancer (KnapFormer's plan_routing/route/"
                        "reverse_route); auto: knapformer through the Balancer, the other "
                        "policies through the Executor (auto)")
    p.add_argument("--bags", default=None,
                   help="KnapFormer bag layout for --policy knapformer, e.g. g1n2+g2n1 "
                        "(default: the uniform g{G}n{W/G} with the lowest predicted makespan "
                        "on the first batch)")
    p.add_argument("--tokens-per-rank", type=_positive("--tokens-per-rank"), default=256,
                   help="tokens each loader rank draws per step (256)")
    p.add_argument("--video-share", type=_fraction, default=0.5,
                   help="probability that a drawn sample is a video (0.5)")
    p.add_argument("--seed", type=int, default=1, help="seed of weights and data (1)")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate (1e-3)")
    p.add_argument("--dim", type=_positive("--dim"), default=64, help="model width (64)")
    p.add_argument("--heads", type=_positive("--heads"), default=4, help="attention heads (4)")
    p.add_argument("--layers", type=_positive("--layers"), default=2, help="blocks (2)")
    p.add_argument("--ffn", type=_positive("--ffn"), default=128, help="MLP width (128)")
    p.add_argument("--channels", type=_positive("--channels"), default=8,
                   help="latent channels per token (8)")
    p.add_argument("--threads", type=_positive("--threads"), default=None,
                   help="torch CPU threads per process (default 1 under torchrun, else torch's)")
    p.add_argument("--no-overlap", action="store_true",
                   help="plan each step in the loop instead of on the background thread")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model (dynamic=False); token rows are padded to "
                        "--capacity-tokens so shapes stay fixed across steps")
    p.add_argument("--compile-backend", default="inductor",
                   help="torch.compile backend with --compile: inductor (generates C++ on CPU; "
                        "the first compile takes minutes on a small machine, later runs hit "
                        "its cache), aot_eager (traces, no code generation) (inductor)")
    p.add_argument("--capacity-tokens", type=_capacity, default=None,
                   help="rows of the tensors the Executor takes and returns: N (fixed; a plan "
                        "that puts more on a rank is an error), pow2 (each rank's own count "
                        "rounded up to a power of two), auto (the power of two above the most "
                        "any rank holds, at least 2 x --tokens-per-rank, raised only when a "
                        "plan needs more) or exact (no padding) (auto with --compile, else "
                        "exact)")
    p.add_argument("--json", action="store_true", help="one JSON object per step on stdout")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu (gloo) or cuda (each rank on GPU LOCAL_RANK, NCCL); the data is "
                        "drawn on the CPU and moved"),
    return p


def check_args(p: argparse.ArgumentParser, a: argparse.Namespace) -> ModelConfig:
    """Checks what argparse cannot; exits through ``p.error`` with one clear line."""
    if a.dim % a.heads:
        p.error(f"--dim {a.dim} is not a multiple of --heads {a.heads}")
    hd = a.dim // a.heads
    if hd % 2 or hd < 6:
        p.error(f"head_dim = --dim / --heads = {hd}: 3D RoPE needs an even head_dim of at least "
                "6 (frame, row and column parts)")
    if a.lr <= 0 or not math.isfinite(a.lr):
        p.error(f"--lr {a.lr}: must be a positive number")
    if a.reference and a.profile:
        p.error("--profile prices plans; --reference does not plan")
    if a.reference and (a.compile or a.capacity_tokens is not None):
        p.error("--compile and --capacity-tokens are for the distributed run (the Executor's "
                "capacity); --reference runs the model eagerly")
    return ModelConfig(dim=a.dim, heads=a.heads, layers=a.layers, ffn=a.ffn,
                       channels=a.channels)


# ---------------------------------------------------------------------------------------------
# The seeded batch stream


@dataclass(frozen=True)
class Sample:
    """One batch sequence: a latent image (1 frame) or video, held by loader rank ``origin``."""

    index: int      # position in the batch (loader rank order, then draw order)
    origin: int
    kind: str       # "image" | "video"
    frames: int
    height: int     # latent patches
    width: int

    @property
    def tokens(self) -> int:
        return self.frames * self.height * self.width


def _mix(*xs: int) -> int:
    """A 63-bit seed from integers (splitmix64 steps), so nearby steps/ranks differ."""
    h = 0x9E3779B97F4A7C15
    for x in xs:
        h = (h ^ (x & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 31
    return h & 0x7FFFFFFFFFFFFFFF


def draw_batch(seed: int, step: int, world: int, tokens_per_rank: int,
               video_share: float) -> List[Sample]:
    """Step ``step``'s batch: loader rank 0's samples, then rank 1's, ... (KnapFormer's global
    order). Each rank draws until it holds ``tokens_per_rank`` tokens: a video with probability
    ``video_share`` (a quarter of them long: 4-8 frames of 8..12 x 8..12 patches, up to 1152
    tokens; the rest 2-4 frames of 4..8 x 4..8), else an image (1 frame of 2..8 x 2..8)."""
    out: List[Sample] = []
    for r in range(world):
        rng = random.Random(_mix(seed, step, r, 1))
        held = 0
        while held < tokens_per_rank:
            if rng.random() < video_share:
                if rng.random() < 0.25:   # a long one: 4-8 frames of 8..12 x 8..12 patches
                    s = Sample(len(out), r, "video", rng.randint(4, 8), rng.randint(8, 12),
                               rng.randint(8, 12))
                else:
                    s = Sample(len(out), r, "video", rng.randint(2, 4), rng.randint(4, 8),
                               rng.randint(4, 8))
            else:
                s = Sample(len(out), r, "image", 1, rng.randint(2, 8), rng.randint(2, 8))
            out.append(s)
            held += s.tokens
    return out


def positions(s: Sample) -> "torch.Tensor":
    """(tokens, 3) int64: (frame, row, col) of each latent patch, frame-major."""
    f, h, w = torch.meshgrid(torch.arange(s.frames), torch.arange(s.height),
                             torch.arange(s.width), indexing="ij")
    return torch.stack([f.reshape(-1), h.reshape(-1), w.reshape(-1)], 1)


def conditioning(seed: int, step: int, batch: Sequence[Sample],
                 cfg: ModelConfig) -> Tuple["torch.Tensor", "torch.Tensor"]:
    """Per sample: diffusion time t in (0, 1) and a caption vector; (B,), (B, text_dim).
    Every rank makes them for the whole batch (they are small); the latents stay local."""
    ts, caps = [], []
    for s in batch:
        g = torch.Generator().manual_seed(_mix(seed, step, s.index, 2))
        ts.append(torch.rand(1, generator=g) * 0.98 + 0.01)
        caps.append(torch.randn(1, cfg.text_dim, generator=g))
    return torch.cat(ts), torch.cat(caps)


def latents(seed: int, step: int, s: Sample, cfg: ModelConfig,
            t: float) -> Tuple["torch.Tensor", "torch.Tensor"]:
    """Sample ``s``'s noisy latent x_t = (1-t)·x0 + t·noise and the flow target noise - x0,
    each (tokens, channels). x0 is a smooth 3D pattern (sines over frame/row/col with
    per-channel frequencies fixed by the seed and a per-sample phase), so there is something
    to learn."""
    gf = torch.Generator().manual_seed(_mix(seed, 0, 0, 3))
    freq = torch.rand(3, cfg.channels, generator=gf) * 1.5 + 0.25     # (3, C)
    g = torch.Generator().manual_seed(_mix(seed, step, s.index, 4))
    phase = torch.rand(cfg.channels, generator=g) * (2 * math.pi)       # (C,)
    x0 = torch.sin(positions(s).float() @ freq + phase)                # (tokens, C)
    noise = torch.randn(s.tokens, cfg.channels, generator=g)
    return (1 - t) * x0 + t * noise, noise - x0


# ---------------------------------------------------------------------------------------------
# The model: a Wan-style DiT (token-wise layers + one attention callback per block)


def rope3d(x: "torch.Tensor", pos: "torch.Tensor") -> "torch.Tensor":
    """3D rotary embedding of x (T, H, D) by pos (T, 3) = (frame, row, col): D splits into a
    frame part of D - 4·(D//6) and row and column parts of 2·(D//6) channels, each rotated in
    adjacent pairs with base 10000 (the C DiT's zg_rope3d_forward)."""
    T, H, D = x.shape
    part = 2 * (D // 6)
    sizes = (D - 2 * part, part, part)
    angles = []
    for axis, n in enumerate(sizes):
        inv = 10000.0 ** (-torch.arange(0, n, 2, dtype=torch.float64, device=x.device) / n)
        angles.append(pos[:, axis:axis + 1].double() * inv)                   # (T, n/2)
    ang = torch.cat(angles, 1).to(x.dtype)[:, None, :]                        # (T, 1, D/2)
    cos, sin = ang.cos(), ang.sin()
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], -1).reshape(T, H, D)


def timestep_embedding(t: "torch.Tensor", dim: int) -> "torch.Tensor":
    """(B,) -> (B, dim): [cos(1000·t·f_i), sin(1000·t·f_i)], f_i = 10000^(-i/half)."""
    half = dim // 2
    f = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device)
                  / half)
    a = (t.float() * 1000.0)[:, None] * f[None, :]
    return torch.cat([a.cos(), a.sin()], 1)


class Block(nn.Module):
    """adaLN-modulated self-attention (RMSNorm on q and k, 3D RoPE) and a GELU MLP, each
    added back through a per-sample gate."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.dim
        self.ada = nn.Linear(d, 6 * d)                 # shift, scale, gate for attn and MLP
        self.norm1 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.norm2 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(d, 3 * d)
        self.q_norm = nn.RMSNorm(d, eps=1e-6)
        self.k_norm = nn.RMSNorm(d, eps=1e-6)
        self.out = nn.Linear(d, d)
        self.fc1 = nn.Linear(d, cfg.ffn)
        self.fc2 = nn.Linear(cfg.ffn, d)

    def forward(self, x: "torch.Tensor", pos: "torch.Tensor", sid: "torch.Tensor",
                cond: "torch.Tensor", attn: AttnFn) -> "torch.Tensor":
        # x (T, d) tokens; pos (T, 3); sid (T,) sample of each token; cond (B, d) per sample
        T = x.shape[0]
        H, D = self.cfg.heads, self.cfg.head_dim
        mod = self.ada(F.silu(cond))[sid]                                  # (T, 6d)
        sh1, sc1, g1, sh2, sc2, g2 = mod.chunk(6, dim=1)
        h = self.norm1(x) * (1 + sc1) + sh1
        q, k, v = self.qkv(h).chunk(3, dim=1)                             # (T, d) each
        q = rope3d(self.q_norm(q).reshape(T, H, D), pos)
        k = rope3d(self.k_norm(k).reshape(T, H, D), pos)
        o = attn(q, k, v.reshape(T, H, D).contiguous())                  # (T, H, D)
        x = x + g1 * self.out(o.reshape(T, H * D))
        h = self.norm2(x) * (1 + sc2) + sh2
        return x + g2 * self.fc2(F.gelu(self.fc1(h), approximate="tanh"))


class DiT(nn.Module):
    """A small Wan-style DiT over packed tokens: patch embedding, time + caption conditioning
    (adaLN), ``layers`` blocks, a modulated output head predicting the flow velocity."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.dim
        self.embed = nn.Linear(cfg.channels, d)
        self.time = nn.Sequential(nn.Linear(cfg.freq_dim, d), nn.SiLU(), nn.Linear(d, d))
        self.text = nn.Linear(cfg.text_dim, d)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.head_ada = nn.Linear(d, 2 * d)
        self.head_norm = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.head = nn.Linear(d, cfg.channels)

    def forward(self, x: "torch.Tensor", pos: "torch.Tensor", sid: "torch.Tensor",
                t: "torch.Tensor", caption: "torch.Tensor", attn: AttnFn) -> "torch.Tensor":
        """x (T, channels) noisy latents, pos (T, 3), sid (T,) index into t (B,) and caption
        (B, text_dim); attn runs self-attention on this layout. Returns (T, channels)."""
        # the conditioning and the head are methods of their own: under torch.compile the
        # attention's graph break inside the block loop leaves this frame eager, and dynamo
        # then compiles the frames it calls (these two and each block's halves)
        cond = self.condition(t, caption)
        h = self.embed(x)
        for blk in self.blocks:
            h = blk(h, pos, sid, cond, attn)
        return self.output(h, sid, cond)

    def condition(self, t: "torch.Tensor", caption: "torch.Tensor") -> "torch.Tensor":
        """(B,) times and (B, text_dim) captions -> (B, d) per-sample conditioning."""
        return self.time(timestep_embedding(t, self.cfg.freq_dim)) + self.text(caption)

    def output(self, h: "torch.Tensor", sid: "torch.Tensor",
               cond: "torch.Tensor") -> "torch.Tensor":
        """(T, d) tokens -> (T, channels) velocity, modulated by their sample's conditioning."""
        shift, scale = self.head_ada(F.silu(cond))[sid].chunk(2, dim=1)
        return self.head(self.head_norm(h) * (1 + scale) + shift)


def make_model(cfg: ModelConfig, seed: int) -> "DiT":
    """The model with weights drawn from ``seed`` (the same on every rank and policy)."""
    torch.manual_seed(_mix(seed, 5))
    return DiT(cfg)


def whole_sequence_attention(lengths: Sequence[int]) -> AttnFn:
    """Reference attention over a pack of whole sequences: each attends to itself only
    (bidirectional softmax(q·kᵀ/√D)·v in fp32)."""
    def attn(q: "torch.Tensor", k: "torch.Tensor", v: "torch.Tensor") -> "torch.Tensor":
        outs, a = [], 0
        for n in lengths:
            qs, ks, vs = (x[a:a + n].transpose(0, 1) for x in (q, k, v))   # (H, n, D)
            outs.append(F.scaled_dot_product_attention(qs, ks, vs).transpose(0, 1))
            a += n
        return torch.cat(outs, 0) if outs else q.new_zeros(q.shape)
    return attn


# ---------------------------------------------------------------------------------------------
# Training


@dataclass
class StepLog:
    """What one step reports (rank 0 prints it)."""

    step: int
    policy: str
    loss: float
    step_ms: float                  # this rank's (rank 0's) step time
    slowest_ms: float = 0.0
    fastest_ms: float = 0.0
    planned_ms: float = 0.0         # the plan's predicted makespan
    measured_ms: float = 0.0        # slowest rank's forward + backward (the measured makespan)
    plan_wait_ms: float = 0.0       # how long the step waited for its plan
    plan_ms: float = 0.0            # the C planner's time for this plan
    split: int = 0                  # sequences run on more than one rank
    sequences: int = 0
    tokens: int = 0
    dispatch_kb: float = 0.0        # bytes all ranks sent to others: dispatch + undispatch
    attn_kb: float = 0.0            # attention (all-to-all, all-gather, ring), fwd + bwd
    capacity: int = 0               # --compile / --capacity-tokens: the Executor's row count
    graphs: int = -1                # --compile: graphs dynamo compiled so far (max over ranks)

    def line(self) -> str:
        if not self.planned_ms:   # the reference
            return (f"step {self.step:4d} {self.policy:<10} loss {self.loss:.6f}  "
                    f"step {self.step_ms:8.2f} ms  ({self.sequences} seqs, "
                    f"{self.tokens} tokens)")
        return (f"step {self.step:4d} {self.policy:<10} loss {self.loss:.6f}  step "
                f"{self.step_ms:8.2f} ms (slowest {self.slowest_ms:8.2f}, fastest "
                f"{self.fastest_ms:8.2f}) | makespan planned {self.planned_ms:8.2f} ms, "
                f"measured {self.measured_ms:8.2f} ms | plan {self.plan_ms:.2f} ms, wait "
                f"{self.plan_wait_ms:.2f} ms | {self.split} split of {self.sequences} seqs, "
                f"sent {self.dispatch_kb:.0f} + {self.attn_kb:.0f} KiB"
                + (f" | capacity {self.capacity}" if self.capacity else "")
                + (f", graphs {self.graphs}" if self.graphs >= 0 else ""))


def _adamw(model: "nn.Module", lr: float) -> "torch.optim.Optimizer":
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, foreach=False)


def run_reference(a: argparse.Namespace, cfg: ModelConfig, emit: Callable[[StepLog], None]) -> None:
    """One process: the whole batch, every sequence attended whole; the losses the distributed
    run must reproduce (same weights, batches and optimizer)."""
    world = a.world_size or 4
    model = make_model(cfg, a.seed)
    opt = _adamw(model, a.lr)
    for step in range(a.steps):
        t0 = time.perf_counter()
        batch = draw_batch(a.seed, step, world, a.tokens_per_rank, a.video_share)
        t, cap = conditioning(a.seed, step, batch, cfg)
        xs, tgt, pos, sid = [], [], [], []
        for s in batch:
            x, y = latents(a.seed, step, s, cfg, float(t[s.index]))
            xs.append(x)
            tgt.append(y)
            pos.append(positions(s))
            sid.append(torch.full((s.tokens,), s.index, dtype=torch.int64))
        x, y = torch.cat(xs), torch.cat(tgt)
        pred = model(x, torch.cat(pos), torch.cat(sid), t, cap,
                     whole_sequence_attention([s.tokens for s in batch]))
        loss = ((pred - y) ** 2).sum() / y.numel()
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        emit(StepLog(step, "reference", float(loss.detach()),
                     (time.perf_counter() - t0) * 1e3, sequences=len(batch),
                     tokens=int(y.shape[0])))


def choose_bags(zellige_mod: object, cfg: ModelConfig, cluster: str, world: int,
                first: List[Sample], profile: Optional[str]) -> str:
    """KnapFormer's layout when --bags is not given: the uniform g{G}n{W/G} (G | heads) with
    the lowest predicted makespan on the first batch (as `zellige train` chooses)."""
    best: Optional[Tuple[float, str]] = None
    lens = [s.tokens for s in first]
    org = [s.origin for s in first]
    for G in range(1, world + 1):
        if world % G or cfg.heads % G:
            continue
        spec = f"g{G}n{world // G}"
        try:
            planner = zellige_mod.Planner(  # type: ignore[attr-defined]
                cfg.planner_model(), cluster, profile, "knapformer", bags=spec)
            pl = planner.plan(lens, origin_ranks=org)
        except ValueError:
            continue
        if best is None or pl.makespan < best[0]:
            best = (pl.makespan, spec)
    if best is None:
        raise SystemExit("train_dit.py: no uniform KnapFormer layout plans the first batch; "
                         "give --bags")
    return best[1]


def _batch_args(batch: Sequence[Sample]) -> Dict[str, object]:
    return {"lengths": [s.tokens for s in batch], "origin_ranks": [s.origin for s in batch],
            "metadata": {"kind": [s.kind for s in batch], "frames": [s.frames for s in batch],
                         "height": [s.height for s in batch],
                         "width": [s.width for s in batch]}}


class _Runner:
    """How a step gets its plan and moves tokens: ``start(batch)`` begins planning a batch
    (in the background; the result has ``result()``), ``take(pending, batch, capacity)``
    returns ``(plan, ex)``, where ``ex`` has ``dispatch``, ``undispatch``, ``attention``,
    ``loader_tokens``, ``loader_capacity`` and ``stats`` (a ``zellige.torch.Executor`` made
    with ``capacity_tokens=capacity``, or the Balancer's)."""

    def start(self, batch: List[Sample]) -> object:
        raise NotImplementedError

    def take(self, pending: object, batch: List[Sample],
             capacity: object = None) -> Tuple[object, object]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _ExecutorRunner(_Runner):
    """zellige.Planner.plan_async on the whole batch (every rank knows it: the stream is
    seeded), then zellige.torch.Executor with the batch's origin ranks."""

    def __init__(self, planner: object, cfg: ModelConfig) -> None:
        self.planner, self.cfg = planner, cfg

    def start(self, batch: List[Sample]) -> object:
        return self.planner.plan_async(**_batch_args(batch))  # type: ignore[attr-defined]

    def take(self, pending: object, batch: List[Sample],
             capacity: object = None) -> Tuple[object, object]:
        import zellige.torch as zt
        plan = pending.result()  # type: ignore[attr-defined]
        return plan, zt.Executor(plan, n_heads=self.cfg.heads, head_dim=self.cfg.head_dim,
                                 origin_ranks=[s.origin for s in batch],
                                 capacity_tokens=capacity)

    def close(self) -> None:
        self.planner.close()  # type: ignore[attr-defined]


class _BalancerRunner(_Runner):
    """zellige.torch.Balancer, as a KnapFormer user calls it: each rank gives only its own
    sequence lengths (plan_routing_async gathers them), route/attention/reverse_route."""

    def __init__(self, balancer: object, rank: int) -> None:
        self.bal, self.rank = balancer, rank

    def start(self, batch: List[Sample]) -> object:
        mine = [s.tokens for s in batch if s.origin == self.rank]
        return self.bal.plan_routing_async(mine)  # type: ignore[attr-defined]

    def take(self, pending: object, batch: List[Sample],
             capacity: object = None) -> Tuple[object, object]:
        self.bal.capacity_tokens = capacity  # type: ignore[attr-defined]
        return self.bal.set_plan(pending), self  # type: ignore[attr-defined]

    # the executor-shaped calls the step makes, in KnapFormer's names
    def dispatch(self, *xs: "torch.Tensor") -> object:
        return self.bal.route(*xs)  # type: ignore[attr-defined]

    def undispatch(self, *ys: "torch.Tensor") -> object:
        return self.bal.reverse_route(*ys)  # type: ignore[attr-defined]

    def attention(self, q: "torch.Tensor", k: "torch.Tensor",
                  v: "torch.Tensor") -> "torch.Tensor":
        return self.bal.attention(q, k, v)  # type: ignore[attr-defined]

    @property
    def loader_tokens(self) -> int:
        return self.bal.local_tokens  # type: ignore[attr-defined]

    @property
    def loader_capacity(self) -> int:
        return self.bal.local_capacity  # type: ignore[attr-defined]

    @property
    def stats(self) -> Dict[str, int]:
        return self.bal.stats  # type: ignore[attr-defined]

    def close(self) -> None:
        self.bal.close()  # type: ignore[attr-defined]


def summary(logs: Sequence[StepLog]) -> str:
    """One line per policy: medians of the step time and of the measured and planned makespan
    (the first step, which warms up, left out when there are more)."""
    rest = list(logs[1:] if len(logs) > 1 else logs)

    def med(xs: List[float]) -> float:
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])

    return (f"summary {logs[0].policy:<10} median step {med([g.slowest_ms for g in rest]):8.2f} "
            f"ms, makespan measured {med([g.measured_ms for g in rest]):8.2f} ms, planned "
            f"{med([g.planned_ms for g in rest]):8.2f} ms, plan wait "
            f"{med([g.plan_wait_ms for g in rest]):.2f} ms"
            f"{'  [first step excluded]' if len(logs) > 1 else ''}")


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class _Capacity:
    """The Executor's ``capacity_tokens`` per step for ``--capacity-tokens`` (docs/pytorch.md,
    "torch.compile: fixed capacities"): ``exact`` -> None, an int or ``pow2`` as given, ``auto``
    -> one power of two for every rank, the most any rank holds in either layout (at least
    2 x tokens per rank), kept until a plan needs more (then each compiled graph is compiled
    once more for the new shape)."""

    def __init__(self, mode: object, tokens_per_rank: int, world: int) -> None:
        self.mode, self.world = mode, world
        self.floor = _pow2(2 * tokens_per_rank)
        self.current = 0

    def for_plan(self, plan: object, batch: Sequence[Sample]) -> object:
        if self.mode == "exact":
            return None
        if self.mode != "auto":
            return self.mode
        held = [0] * self.world
        for s in batch:
            held[s.origin] += s.tokens
        need = max(max(held), int(plan.arrays.rank_tokens.max()))  # type: ignore[attr-defined]
        if need > self.current:
            self.current = max(self.floor, _pow2(need))
        return self.current


def _sample_rows(world: int, tokens_per_rank: int) -> int:
    """The most samples a batch can have: a loader rank draws until it holds tokens_per_rank
    tokens and the smallest sample (a 2 x 2 image) has 4."""
    return world * -(-tokens_per_rank // 4)


def _compiled_graphs() -> int:
    """Graphs dynamo has compiled in this process (torch._dynamo's counters)."""
    from torch._dynamo.utils import counters
    return int(counters["stats"]["unique_graphs"])


def run_distributed(a: argparse.Namespace, cfg: ModelConfig,
                    emit: Callable[[StepLog], None]) -> None:
    """Every rank: plan (ahead, on the planner's thread), dispatch, train, undispatch."""
    import torch.distributed as dist

    import zellige
    import zellige.torch as zt

    rank, world = dist.get_rank(), dist.get_world_size()
    if a.world_size is not None and a.world_size != world:
        raise SystemExit(f"train_dit.py: --world-size {a.world_size} differs from the torchrun "
                         f"world size {world}; leave it out under torchrun")
    cluster = a.cluster or f"cpu:{world}"
    dev = torch.device("cuda", torch.cuda.current_device()) if a.device == "cuda" else \
        torch.device("cpu")

    def sync() -> None:  # step times must include the GPU's queued work
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    for policy in a.policy:
        batches = (draw_batch(a.seed, s, world, a.tokens_per_rank, a.video_share)
                   for s in range(a.steps))
        first = next(batches)
        opts: Dict[str, object] = {}
        if policy == "knapformer":
            opts["bags"] = a.bags or choose_bags(zellige, cfg, cluster, world, first, a.profile)
        use_balancer = a.api == "balancer" or (a.api == "auto" and policy == "knapformer")
        try:
            if use_balancer:   # KnapFormer's workflow: the lengths are all-gathered per step
                runner: _Runner = _BalancerRunner(zt.Balancer(
                    cfg.planner_model(), cluster, policy, profile=a.profile,
                    n_heads=cfg.heads, head_dim=cfg.head_dim, **opts), rank)
            else:
                planner = zellige.Planner(cfg.planner_model(), cluster, a.profile, policy,
                                          **opts)
                if planner.world_size != world:
                    raise zellige.PlanError(
                        f"cluster {cluster!r} has {planner.world_size} ranks but torchrun "
                        f"started {world}; give --cluster cpu:{world} or {world}xA800 (NxGPU)")
                runner = _ExecutorRunner(planner, cfg)
        except zellige.PlanError as e:
            raise SystemExit(f"train_dit.py: planner: {e}") from None
        model = make_model(cfg, a.seed).to(dev)
        opt = _adamw(model, a.lr)
        params = [p for p in model.parameters()]
        fwd: Callable[..., "torch.Tensor"] = model
        cap_mode = a.capacity_tokens if a.capacity_tokens is not None else (
            "auto" if a.compile else "exact")
        capacity = _Capacity(cap_mode, a.tokens_per_rank, world)
        # fixed shapes: token rows padded to the capacity, per-sample rows to the most a batch
        # can have (a new B every step would recompile the conditioning and every block)
        b_rows = _sample_rows(world, a.tokens_per_rank) if cap_mode != "exact" else 0
        if a.compile:
            fwd = torch.compile(model, backend=a.compile_backend, dynamic=False)
            graphs0 = _compiled_graphs()
        if rank == 0:
            extra = f", bags {opts['bags']}" if "bags" in opts else ""
            print(f"train_dit: {sum(p.numel() for p in params)} params, {world} ranks "
                  f"({dist.get_backend()}, {dev}), cluster {cluster}, prices "
                  f"{'table ' + a.profile if a.profile else 'analytic'}, policy {policy}{extra}"
                  f", via {'zellige.torch.Balancer' if use_balancer else 'Planner + Executor'}",
                  flush=True)
        logs: List[StepLog] = []
        # step 0's plan now; from then on, step t+1's plan is made while step t trains
        pending = runner.start(first)
        batch = first
        for step in range(a.steps):
            sync()
            t0 = time.perf_counter()
            pending.result()                    # the wait for this step's plan (if any)
            wait_ms = (time.perf_counter() - t0) * 1e3
            try:
                cap_rows = capacity.for_plan(pending.result(), batch)  # type: ignore
                plan, ex = runner.take(pending, batch, cap_rows)
            except zellige.PlanError as e:   # e.g. a plan above a fixed --capacity-tokens
                raise SystemExit(f"train_dit.py: step {step}: {e}") from None
            nxt = next(batches, None)
            if nxt is not None and not a.no_overlap:
                pending = runner.start(nxt)    # overlaps this step

            # loader layout: this rank's whole sequences, in plan (= batch) order
            t, cap = conditioning(a.seed, step, batch, cfg)
            t, cap = t.to(dev), cap.to(dev)
            mine = [s for s in batch if s.origin == rank]
            xs, tgt, idx = [], [], []
            for s in mine:
                x, y = latents(a.seed, step, s, cfg, float(t[s.index]))
                xs.append(x)
                tgt.append(y)
                idx.append(torch.cat([torch.full((s.tokens, 1), s.index, dtype=torch.int64),
                                      positions(s)], 1))
            x_l = torch.cat(xs) if xs else torch.zeros(0, cfg.channels)
            y_l = torch.cat(tgt) if tgt else torch.zeros(0, cfg.channels)
            i_l = torch.cat(idx) if idx else torch.zeros(0, 4, dtype=torch.int64)
            x_l, y_l, i_l = x_l.to(dev), y_l.to(dev), i_l.to(dev)
            if ex.loader_tokens != x_l.shape[0]:
                raise RuntimeError(f"rank {rank}: the executor expects {ex.loader_tokens} loader "
                                   f"tokens, the batch stream gave {x_l.shape[0]}")
            n_total = sum(s.tokens for s in batch) * cfg.channels
            n_local = x_l.shape[0]
            if ex.loader_capacity != n_local:   # padding rows: zeros in, ignored by dispatch
                x_l = F.pad(x_l, (0, 0, 0, ex.loader_capacity - n_local))
                i_l = F.pad(i_l, (0, 0, 0, ex.loader_capacity - n_local))
            if b_rows:                           # padding samples: never indexed by a token
                t = F.pad(t, (0, b_rows - t.shape[0]), value=0.5)
                cap = F.pad(cap, (0, 0, 0, b_rows - cap.shape[0]))

            sync()
            t1 = time.perf_counter()
            # latents (plan_tokens, C) and (plan_tokens, 4) int64 sample, frame, row, col:
            # one all-to-all, each keeps its dtype
            x_p, i_p = ex.dispatch(x_l, i_l)           # (Balancer: route)
            pred_p = fwd(x_p, i_p[:, 1:], i_p[:, 0], t, cap, ex.attention)
            pred_l = ex.undispatch(pred_p)              # back to the loader layout (reverse_route)
            loss = ((pred_l[:n_local] - y_l) ** 2).sum() / n_total
            opt.zero_grad(set_to_none=False)
            loss.backward()
            sync()
            fb_ms = (time.perf_counter() - t1) * 1e3
            # gradients of the replicated weights: one all-reduce (sum) of one flat buffer
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.all_reduce(flat)
            o = 0
            for p in params:
                n = p.numel()
                p.grad.copy_(flat[o:o + n].view_as(p))
                o += n
            opt.step()
            sync()
            step_ms = (time.perf_counter() - t0) * 1e3

            st = ex.stats
            attn_bytes = st["bytes_alltoall"] + st["bytes_allgather"] + st["bytes_ring"]
            graphs = _compiled_graphs() - graphs0 if a.compile else -1
            stats = torch.tensor([float(loss.detach()), st["bytes_dispatch"], attn_bytes,
                                  -step_ms, step_ms, fb_ms, graphs], dtype=torch.float64,
                                 device=dev)
            gl = stats[:3].clone()        # sums over ranks: loss, bytes
            dist.all_reduce(gl)
            mm = stats[3:].clone()
            dist.all_reduce(mm, op=dist.ReduceOp.MAX)
            if nxt is not None and a.no_overlap:
                pending = runner.start(nxt)
            split = int((plan.arrays.config.prod(axis=1) > 1).sum()) if len(plan) else 0
            log = StepLog(step, policy, float(gl[0]), step_ms, float(mm[1]), -float(mm[0]),
                          plan.makespan * 1e3, float(mm[2]), wait_ms, plan.plan_time_ms,
                          split, len(batch), sum(s.tokens for s in batch),
                          float(gl[1]) / 1024, float(gl[2]) / 1024,
                          int(cap_rows) if isinstance(cap_rows, int) else 0, int(mm[3]))
            logs.append(log)
            if rank == 0:
                emit(log)
            if nxt is not None:
                batch = nxt
        runner.close()
        if rank == 0 and not a.json:
            print(summary(logs), flush=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    cfg = check_args(parser, a)
    under_torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    if not a.reference and not under_torchrun:
        parser.error("run it under torchrun (torchrun --nproc-per-node 4 examples/train_dit.py "
                     "...) or give --reference for the one-process run")
    if a.threads:
        torch.set_num_threads(a.threads)
    elif under_torchrun and not a.reference:
        torch.set_num_threads(1)

    def emit(log: StepLog) -> None:
        print(json.dumps(log.__dict__) if a.json else log.line(), flush=True)

    if a.reference:
        run_reference(a, cfg, emit)
        return 0
    import torch.distributed as dist
    if a.device == "cuda":
        if not torch.cuda.is_available():
            parser.error("--device cuda: torch sees no CUDA device")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))  # before NCCL's init
    dist.init_process_group("nccl" if a.device == "cuda" else "gloo")
    try:
        run_distributed(a, cfg, emit)
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
