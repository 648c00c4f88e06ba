"""trainprof.distributed - torch.distributed jobs: each all-reduce as a zone
with its byte count, and the ranks' clocks aligned to rank 0.

    import trainprof.distributed as tpd
    model = torch.nn.parallel.DistributedDataParallel(model)
    tpd.profile_ddp(model, prof)     # before the first backward
    tpd.sync(prof)                   # every rank, once, after setup

profile_ddp registers a DDP communication hook around torch's default
all-reduce hook (or the hook you pass): the gradients are the inner hook's,
unchanged. For every gradient bucket it records a counter
"all_reduce.bytes" (the bucket's size) when the bucket is launched and a
zone "all_reduce" from launch to completion, on the thread that completes
it (gloo's or NCCL's worker: the zone overlaps the backward pass that keeps
computing meanwhile). The time a rank spends in all-reduce beyond the
fastest rank's is its wait for the others: `trainprof analyze JOB_DIR`
separates the two (docs/DISTRIBUTED.md).

sync(prof) measures this rank's clock offset to rank 0 across the process
group's barrier (tp_session_sync) so merged timelines line up; every rank
must call it, profiled or not.

torch is imported only when this module is.
"""
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

__all__ = ["comm_hook", "profile_ddp", "sync"]


def comm_hook(prof, inner=None, name="all_reduce"):
    """A DDP communication hook (state, bucket) -> Future that runs `inner`
    (default: torch's allreduce_hook, the averaging all-reduce DDP does
    itself) and records it in `prof` as zone `name` plus a counter
    `name + ".bytes"`. A profiler that is disabled or closed records
    nothing; the inner hook always runs."""
    inner = inner or default_hooks.allreduce_hook
    bytes_name = name + ".bytes"

    def hook(state, bucket):
        token = None
        if prof.enabled and not prof.closed:
            buf = bucket.buffer()
            prof.counter(bytes_name, buf.numel() * buf.element_size())
            token = prof.start_timer(name)
        fut = inner(state, bucket)
        if token is None:
            return fut

        def done(f):
            if not prof.closed:
                prof.end_timer(name, token)
            return f.value()

        return fut.then(done)

    return hook


def profile_ddp(model, prof, inner=None, state=None):
    """Registers comm_hook(prof, inner) on a DistributedDataParallel model.
    state is what the inner hook receives (the process group for the
    default hook; None = the default group)."""
    model.register_comm_hook(state, comm_hook(prof, inner))
    return model


def sync(prof, barrier=None):
    """Aligns this rank's clock to rank 0's across `barrier` (default
    torch.distributed.barrier). Collective: every rank calls it. Returns
    (offset_ns, error_ns) of this rank, or None when the profiler records
    nothing or has no job directory (set profiling.job_id)."""
    prof.sync(barrier or dist.barrier)
    return prof.clock_offset()
