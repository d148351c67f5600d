#!/usr/bin/env python
"""Cost of one decoding step of n-gram blocking: the plugin's old path against the tensor path.

Each timed call is what fairseq's ``SequenceGenerator`` asks of its n-gram blocker once per decoding step:
given the token buffer of all ``batch x beam`` hypotheses (start token, ``step`` generated tokens, then
padding up to the length limit) and their next-token log-probs ``(batch x beam, vocab)``, set the
banned ones to -inf. Variants:

* ``old path``: the plugin's blocker before vectorization: fairseq's ``_no_repeat_ngram`` over the
  generated prefix (the token buffer copied to the host, a list of bans built per hypothesis, then one
  indexed write per hypothesis), with exemptions a second pass over the whole log-prob matrix to lift
  exempt n-grams; for n = 1 no loop but a scatter into a copy of the log-probs;
* ``tensor``: ``PrefixNGramRepeatBlock`` without fairseq's CUDA extension, all hypotheses at once;
* ``CUDA kernel``: fairseq's extension, only when it is built and usable (the fairseq-fixed wheel ships
  none).

Tokens are drawn from ``--distinct`` word ids, so n-grams repeat as they do in text. Before timing, the
script checks that every variant bans exactly the same tokens. Variants run interleaved, ``--calls``
calls per repetition; the table gives each one's median over ``--repeats`` repetitions (ms per step)
and the median of the per-repetition ratios. On CUDA each repetition ends with a synchronize, so the
times include the kernels, not just their launch. This is a measurement, not a test.

Usage::

    python benchmarks/bench_ngram_block.py                          # CPU, 64 x 5 rows, steps 10 30 48, n=3
    python benchmarks/bench_ngram_block.py --device cuda            # on the GPU
    python benchmarks/bench_ngram_block.py --exempt 1012 --dtype float16 --steps 48 --repeats 3
"""

import argparse
import math
import statistics
import time
from typing import Callable, Dict, List

import torch
from bench_common import busy_warning, machine_line
from fairseq.ngram_repeat_block import is_cuda_extension_usable

from unilm_fairseq.modules.ngram_block import PrefixNGramRepeatBlock


class PythonLoopBlocker(PrefixNGramRepeatBlock):
    """The plugin's blocker before vectorization: fairseq's Python fallback given the prefix, the unigram
    rule, exempt n-grams lifted afterwards."""

    def __init__(self, size: int, exempt=()):
        super().__init__(size, exempt, use_extension=False)

    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        if not self.exempt:
            return self._loop_block(tokens, lprobs, bsz, beam_size, step)
        banned = self._loop_block(tokens, torch.zeros_like(lprobs), bsz, beam_size, step).isinf()
        exempt = torch.tensor(self.exempt, device=lprobs.device)
        banned[:, exempt] = False
        context = tokens[:, max(step + 2 - self.no_repeat_ngram_size, 0) : step + 1]
        banned[torch.isin(context, exempt).any(1)] = False
        return lprobs.masked_fill(banned, -math.inf)

    def _loop_block(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        if self.no_repeat_ngram_size == 1:
            return lprobs.scatter(1, tokens[:, 1 : step + 1].long(), -math.inf)
        return self._no_repeat_ngram(tokens[:, : step + 1], lprobs, bsz, beam_size, step)


def token_buffer(args, step: int, device: torch.device) -> torch.Tensor:
    """``batch x beam`` rows: </s> (id 2), ``step`` words, then padding (id 1) up to ``--max-len`` + 2."""
    generator = torch.Generator().manual_seed(step)
    rows = args.batch * args.beam
    words = torch.randint(4, 4 + args.distinct, (rows, step), generator=generator)
    tokens = torch.ones(rows, args.max_len + 2, dtype=torch.long)
    tokens[:, 0] = 2
    tokens[:, 1 : step + 1] = words
    return tokens.to(device)


def synchronize(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_calls(call: Callable[[], torch.Tensor], calls: int, device: torch.device) -> float:
    """Milliseconds per call, over ``calls`` calls."""
    synchronize(device)
    start = time.perf_counter()
    for _ in range(calls):
        call()
    synchronize(device)
    return (time.perf_counter() - start) * 1000 / calls


def measure_step(args, step: int, device: torch.device, dtype: torch.dtype) -> Dict[str, List[float]]:
    """Times per variant (ms per call, one per repetition) for one step; checks the variants agree first."""
    tokens = token_buffer(args, step, device)
    rows = tokens.size(0)
    lprobs = torch.randn(rows, args.vocab, dtype=dtype, device=device).log_softmax(-1)
    variants = {
        "old path": PythonLoopBlocker(args.size, args.exempt),
        "tensor": PrefixNGramRepeatBlock(args.size, args.exempt, use_extension=False),
    }
    if device.type == "cuda" and is_cuda_extension_usable():
        variants["CUDA kernel"] = PrefixNGramRepeatBlock(args.size, args.exempt, use_extension=True)
    bans = {
        name: blocker(tokens, lprobs.clone(), args.batch, args.beam, step).isinf()
        for name, blocker in variants.items()
    }
    for name, banned in bans.items():
        if not torch.equal(banned, bans["old path"]):
            raise SystemExit(f"step {step}: {name} bans differ from the old path's")
    # the log-probs are overwritten with -inf in place; the cost does not depend on the values
    buffers = {name: lprobs.clone() for name in variants}
    times: Dict[str, List[float]] = {name: [] for name in variants}
    names = list(variants)
    for repeat in range(args.repeats + 1):  # the first round warms up and is dropped
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        for name in order:
            blocker, buffer = variants[name], buffers[name]
            elapsed = time_calls(
                lambda: blocker(tokens, buffer, args.batch, args.beam, step), args.calls, device
            )
            if repeat:
                times[name].append(elapsed)
    times["banned per row"] = [bans["old path"].sum().item() / rows]
    return times


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Times are ms per decoding step (one blocker call for all rows); see the module docstring.",
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--batch", type=int, default=64, help="sentences per batch (default: 64)")
    parser.add_argument("--beam", type=int, default=5, help="beam size (default: 5)")
    parser.add_argument(
        "--steps", type=int, nargs="+", default=[10, 30, 48], help="steps (default: 10 30 48)"
    )
    parser.add_argument("--size", type=int, default=3, help="n-gram size (default: 3)")
    parser.add_argument("--vocab", type=int, default=30522, help="vocabulary size (default: 30522, BERT's)")
    parser.add_argument("--max-len", type=int, default=48, help="output length limit (default: 48)")
    parser.add_argument(
        "--distinct", type=int, default=20, help="word ids the tokens are drawn from (default: 20)"
    )
    parser.add_argument("--exempt", type=int, nargs="*", default=[], help="exempt token ids (default: none)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--calls", type=int, default=20, help="calls per repetition (default: 20)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions (default: 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default: 1)")
    args = parser.parse_args(argv)
    if max(args.steps) > args.max_len:
        parser.error("--steps must not exceed --max-len")
    return args


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    print(machine_line(device))
    print(
        f"rows {args.batch} x {args.beam}, n {args.size}, vocab {args.vocab}, {args.dtype} log-probs, "
        f"exempt {args.exempt or 'none'}, tokens from {args.distinct} words, "
        f"{args.repeats} repetitions x {args.calls} calls"
    )
    warning = busy_warning(args.threads, "(all variants alike: they run interleaved)")
    if warning:
        print(warning)
    results = {step: measure_step(args, step, device, dtype) for step in args.steps}
    kernel = any("CUDA kernel" in times for times in results.values())
    header = ["step", "bans per row", "old path (ms)", "tensor (ms)", "old / tensor"]
    if kernel:
        header += ["CUDA kernel (ms)", "tensor / CUDA kernel"]
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for step, times in results.items():
        loop, tensor = times["old path"], times["tensor"]
        cells = [
            str(step),
            f"{times['banned per row'][0]:.2f}",
            f"{statistics.median(loop):.3f}",
            f"{statistics.median(tensor):.3f}",
            f"**{statistics.median(a / b for a, b in zip(loop, tensor)):.1f}**",
        ]
        if kernel:
            cuda = times["CUDA kernel"]
            cells += [
                f"{statistics.median(cuda):.3f}",
                f"{statistics.median(a / b for a, b in zip(tensor, cuda)):.2f}",
            ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
