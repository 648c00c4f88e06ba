"""The same kind of work as bench_cuda.cu (steps of many tiny kernels and
one synchronize) under torch.profiler (CPU + CUDA activities) vs without,
for comparing capture overhead with trainprof's CUPTI windows. Needs PyTorch
with CUDA and a GPU; says so and exits 0 otherwise.

usage: python bench_torch_profiler.py [steps] [launches]
"""
import sys
import time


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    launches = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    try:
        import torch
    except ImportError:
        print("bench_torch_profiler: no PyTorch: nothing measured")
        return 0
    if not torch.cuda.is_available():
        print("bench_torch_profiler: PyTorch has no CUDA device: nothing measured")
        return 0
    x = torch.zeros(32, device="cuda")

    def run():
        t0 = time.perf_counter()
        for _ in range(steps):
            for _ in range(launches):
                x.add_(1.0)
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / steps

    run()
    base = run()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts):
        prof = run()
    print(f"{launches} launches + sync per step: no profiler {base * 1e6:.1f} us/step, "
          f"torch.profiler {prof * 1e6:.1f} us/step, x{prof / base:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
