"""zellige.torch — execute zellige plans with torch.distributed.

Imported on its own (``import zellige.torch as zt``; ``import zellige`` does not need torch)::

    import zellige.torch as zt
    ex = zt.Executor(plan, n_heads=H, head_dim=D)    # this rank of the default group
    x_plan, pos_plan = ex.dispatch(x_loader, pos_loader)   # loader -> plan layout, one all-to-all
    o = ex.attention(q, k, v)                        # (plan_tokens, H, D); autograd
    y_loader = ex.undispatch(y_plan)                 # the exact inverse
    ex.stats                                          # bytes per class, collectives, kernel calls

The schedule (who sends what to whom, in which order, and every kernel step's slices) is the
C engine's (src/engine/sched.c); this package runs it with torch ops. See docs/pytorch.md.
"""
from .executor import Executor, coalesced_attention, dispatch, undispatch
from ._schedule import comm_model_bytes, plan_columns
from .balancer import Balancer  # KnapFormer's plan_routing/route/reverse_route shape

__all__ = ["Balancer", "Executor", "coalesced_attention", "dispatch", "undispatch", "comm_model_bytes",
           "plan_columns"]
