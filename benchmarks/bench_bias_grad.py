#!/usr/bin/env python
"""Cost of the relative-position bias table's lookup and gradient, one training update's worth, per method.

UniLMv2's per-head bias comes from a small table (``--rel-pos-bins`` buckets x heads) indexed by the bucket
of every query/key pair, ``(B, T, S)`` ids, and all layers read the same ``(B, H, T, S)`` bias. Its
gradient is a sum of ``B x T x S`` rows per bucket. A float16 profile of a base-size update on an NVIDIA
H200 put that sum (torch's sort-based embedding backward) at about 7.5 ms of a 71 ms AE update
(benchmarks/README.md, "Where a float16 update's GPU time goes"). This script times the lookup forward
and backward of the ways to compute it, on the shapes of one update, so that a GPU run can choose:

* ``embedding``: ``nn.Embedding`` (what the model runs on a GPU): torch's embedding backward;
* ``index_add``: ``index_add_`` of the gradient rows (the model's CPU path before the bucket bins);
* ``one-hot bmm``: the gradient as batched products of the bias gradient with the one-hot buckets,
  ``--chunk`` rows of the batch at a time, in float32;
* ``bucket bins``: the model's CPU path, ``_TableLookup``: ``scatter_add_`` of each query row's keys into
  its row's buckets (few additions meet in one bin), then a sum over rows, in float32.

Before timing, every method's table gradient is checked against a float64 sum. Shapes: ``--shapes``
lists ``T x S`` query/key sizes (default: an AE update's 512 x 512 and the appended tokens' 153 x 665 of a
PMLM update at 512 tokens); query positions are ``0..T-1`` and key positions ``0..S-1``, shifted per row.
Methods run interleaved; the table gives each one's median over ``--repeats`` (ms per lookup, forward and
backward) and its ratio to ``embedding``. This is a measurement, not a test.

Usage::

    python benchmarks/bench_bias_grad.py                                     # CPU, float32
    python benchmarks/bench_bias_grad.py --device cuda --dtype float16       # what a --fp16 update runs
"""

import argparse
import statistics
import time
from typing import Callable, Dict

import torch
import torch.nn.functional as F
from bench_common import busy_warning, machine_line

from unilm_fairseq.modules.relative_position import RelativePositionBias, _TableLookup

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class _OneHotProducts(_TableLookup):
    """The model's lookup, whose backward is ``sum_b grad[b] @ one_hot(buckets[b])`` in float32,
    ``rows_per_product`` rows of the batch at a time."""

    rows_per_product = 4

    @staticmethod
    def backward(ctx, grad):  # grad: B x T x S x H
        (buckets,) = ctx.saved_tensors
        bsz, heads, chunk = grad.size(0), grad.size(-1), _OneHotProducts.rows_per_product
        total = grad.new_zeros(heads, ctx.num_rows, dtype=torch.float32)
        for start in range(0, bsz, chunk):
            rows = grad[start : start + chunk].reshape(-1, grad.size(1) * grad.size(2), heads)
            one_hot = F.one_hot(buckets[start : start + chunk].flatten(1), ctx.num_rows).float()
            total += torch.bmm(rows.transpose(1, 2).float(), one_hot).sum(0)
        return None, total.t().to(grad.dtype)


class _IndexAdd(_TableLookup):
    """The model's lookup, whose backward adds the gradient rows with one ``index_add_`` (the CPU path
    before the bucket bins)."""

    @staticmethod
    def backward(ctx, grad):
        (buckets,) = ctx.saved_tensors
        rows = grad.reshape(-1, grad.size(-1))
        return None, rows.new_zeros(ctx.num_rows, rows.size(1)).index_add_(0, buckets.reshape(-1), rows)


def lookups(chunk: int) -> Dict[str, Callable]:
    """Each method as ``(buckets, weight) -> (B, H, T, S)`` bias."""
    _OneHotProducts.rows_per_product = chunk
    tables = {
        "embedding": F.embedding,
        "index_add": _IndexAdd.apply,
        "one-hot bmm": _OneHotProducts.apply,
        "bucket bins": _TableLookup.apply,
    }
    return {name: lambda buckets, weight, table=table: table(buckets, weight).permute(0, 3, 1, 2)
            for name, table in tables.items()}  # fmt: skip


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="table and gradient dtype")
    parser.add_argument("--batch-size", type=int, default=32, help="rows of the batch (default 32)")
    parser.add_argument("--heads", type=int, default=12, help="attention heads (default 12)")
    parser.add_argument("--buckets", type=int, default=32, help="--rel-pos-bins (default 32)")
    parser.add_argument("--max-distance", type=int, default=128, help="--max-rel-pos (default 128)")
    parser.add_argument(
        "--shapes",
        nargs="+",
        default=["512x512", "153x665"],
        help="query x key sizes (default 512x512 153x665)",
    )
    parser.add_argument("--chunk", type=int, default=4, help="rows per product in 'one-hot bmm' (default 4)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions (default 5)")
    parser.add_argument("--calls", type=int, default=3, help="lookups per repetition (default 3)")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (default: all)")
    return parser.parse_args()


def main():
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device, dtype = torch.device(args.device), DTYPES[args.dtype]
    busy = busy_warning(torch.get_num_threads(), "(ratios are steadier than absolute figures)")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    print("unilm_fairseq relative-position bias: the table's lookup and gradient per method")
    print(machine_line(device))
    print(
        f"sizes   : batch {args.batch_size}, {args.heads} heads, {args.buckets} buckets (max distance "
        f"{args.max_distance}), {args.dtype}; {args.calls} lookups per repetition, {args.repeats} repetitions"
    )
    methods = lookups(args.chunk)
    table = RelativePositionBias(args.heads, args.buckets, args.max_distance).to(device)
    generator = torch.Generator().manual_seed(0)
    for shape in args.shapes:
        length, keys = (int(n) for n in shape.lower().split("x"))
        shift = torch.randint(0, 16, (args.batch_size, 1), generator=generator)
        queries = (torch.arange(length) + shift).to(device)
        buckets = table.buckets(queries, (torch.arange(keys) + shift).to(device))
        grad = torch.randn(args.batch_size, args.heads, length, keys, generator=generator).to(device, dtype)
        weight = torch.randn(args.buckets, args.heads, generator=generator).to(device, dtype).requires_grad_()

        reference = torch.zeros(args.buckets, args.heads, dtype=torch.float64, device=device)
        reference.index_add_(0, buckets.flatten(), grad.permute(0, 2, 3, 1).reshape(-1, args.heads).double())
        checks = []
        for name, lookup in methods.items():
            weight.grad = None
            lookup(buckets, weight).backward(grad)
            error = (weight.grad.double() - reference).abs().max().item() / reference.abs().max().item()
            checks.append(f"{name} {error:.1e}")
        print()
        print(f"shape   : {length} queries x {keys} keys")
        print(
            f"check   : largest gradient error over the largest entry, against float64: {', '.join(checks)}"
        )

        times = {name: [] for name in methods}
        for repeat in range(args.repeats + 1):  # the first one warms up
            for name, lookup in methods.items():
                sync()
                start = time.perf_counter()
                for _ in range(args.calls):
                    weight.grad = None
                    lookup(buckets, weight).backward(grad)
                sync()
                if repeat:
                    times[name].append((time.perf_counter() - start) / args.calls * 1000)
        base = statistics.median(times["embedding"])
        print(f"{'method':<16}{'ms per lookup':>15}{'min..max':>18}{'vs embedding':>14}")
        for name, values in times.items():
            median, spread = statistics.median(values), f"{min(values):.2f}..{max(values):.2f}"
            print(f"{name:<16}{median:>15.2f}{spread:>18}{median / base:>14.2f}")
    print("(ms per lookup: forward and backward of one bias lookup; an update has one per pass, PMLM two)")
    if busy:
        print(busy)


if __name__ == "__main__":
    main()
