"""zellige — moldable sequence placement for mixed image/video DiT training, from Python.

The planner is the C library of this repository (built into the package when it is
installed); this package converts inputs, calls it through ctypes (the GIL is released while
it plans) and wraps its plans::

    import zellige
    planner = zellige.Planner(model="wan2.1-1.3b", cluster="16xA800")   # kept across steps
    plan = planner.plan([219600, 32760, 8160, 8160])                     # token counts
    for s in plan.sequences:
        print(s.config, s.ranks, s.shards)                               # θ=(q,h,k), ranks, ranges
    print(plan.makespan, plan.plan_time_ms)

See :class:`Planner`, :class:`Plan`, :class:`Batch`, :func:`read_batch`,
:func:`workload_mix` and docs/pytorch.md in the repository. ``import zellige.torch`` (needs
torch) executes plans with torch.distributed; ``import zellige`` itself does not need torch.
"""
from .planner import (Batch, Config, OverCapWarning, Plan, PlanArrays, PlanError, Planner, RankLoad,
                      SequencePlacement, Shard, policies, read_batch, workload_mix)

__version__ = "0.1.0"

__all__ = ["Planner", "Plan", "PlanError", "OverCapWarning", "Batch", "Config", "Shard", "SequencePlacement",
           "RankLoad", "PlanArrays", "policies", "read_batch", "workload_mix", "__version__"]
