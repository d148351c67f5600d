#!/usr/bin/env python
"""Train-step cost of UniLMv2's one-pass PMLM (AE+PAR) against AE alone and against naive PAR.

Targets (project issue), on the same batch of 512-token blocks:

* a PMLM (AE+PAR) train step costs at most 1.4x an AE-only step;
* it costs at least 10x less than computing PAR naively: one forward per
  factorization step ``i`` over ``[context | originals of steps < i | [P] of step i]``.

Every variant sees the same tokens and the same masked positions: random-word
blocks go through the library's ``SegmentPairDataset`` ("[SOS] S1 [EOS] S2
[EOS]", exactly ``--tokens`` long) and ``PMLMDataset`` (same seed and indices),
and batches come from its collater. The naive per-step items are cut out of the
one-pass items and collated by the same collater, which builds their masks with
``masks.pmlm_mask``; with dropout off their [P] losses equal the one-pass PAR
losses (checked and printed). A train step is: forward, ``losses.token_losses``
on the predicted positions (``masked_tokens``), backward, one Adam step. Naive
PAR runs one forward+backward per step, accumulating gradients, then one Adam
step; it computes PAR only (no AE), which favours the naive side.

Variants run interleaved (AE, PMLM, naive, then the reverse) so machine noise
hits all of them; ratios are medians of per-repetition ratios. Batches are
built before timing (fairseq loads data while it trains); their build time is
shown in its own column. On a shared machine, ``--threads 1`` gives steadier
numbers. This is a measurement, not a test.

Usage::

    python benchmarks/bench_pmlm.py                                # unilmv2_small, 2 x 512 tokens
    python benchmarks/bench_pmlm.py --arch unilmv2_base --batch-size 1 --naive-steps-limit 8
    python benchmarks/bench_pmlm.py --arch unilmv2_tiny --repeats 5 --threads 1

``--naive-steps-limit N`` times only the first N factorization steps and
extrapolates linearly by the number of steps (marked in the table). The first
steps have the shortest sequences, so the extrapolation underestimates naive PAR.
"""

import argparse
import os
import statistics
import time
from typing import Callable, Dict, List

import numpy as np
import torch
from bench_common import build_dictionary, busy_warning, load_average, machine_line
from fairseq.data import Dictionary, ListDataset, data_utils
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_INV_REGISTRY

from unilm_fairseq.data.dictionary import MASK_SYMBOL
from unilm_fairseq.data.pretraining import PMLMDataset, SegmentPairDataset
from unilm_fairseq.data.pretraining.pmlm_dataset import CONTEXT, ORIGINAL, PSEUDO
from unilm_fairseq.data.pretraining.segment_pairs import SPECIAL_TOKENS_PER_PAIR
from unilm_fairseq.losses import token_losses
from unilm_fairseq.models.unilmv2 import UniLMv2Config, UniLMv2Model

PMLM_PER_AE_TARGET = 1.4  # PMLM step / AE step, at most
NAIVE_PER_PMLM_TARGET = 10.0  # naive PAR step / PMLM step, at least
# float32 losses of the same prediction computed in two layouts differ only by summation order
CHECK_TOLERANCE = 1e-3
SENTENCE_LENGTHS = (8, 40)  # words per random sentence, inclusive
LEARNING_RATE = 1e-4

AE, PMLM, NAIVE = "AE only", "AE+PAR (PMLM)", "naive PAR"

Batch = Dict[str, object]


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    archs = sorted(a for a in ARCH_MODEL_INV_REGISTRY["unilmv2"] if a != "unilmv2")
    parser.add_argument("--arch", default="unilmv2_small", choices=archs, help="model size")
    parser.add_argument("--batch-size", type=int, default=2, help="blocks per batch")
    parser.add_argument("--tokens", type=int, default=512, help="tokens per block, specials included")
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions of every variant")
    parser.add_argument("--warmup", type=int, default=1, help="untimed repetitions first")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all logical CPUs)")
    parser.add_argument(
        "--naive-steps-limit",
        type=int,
        default=0,
        help="time only the first N factorization steps of naive PAR and extrapolate (0: all)",
    )
    parser.add_argument("--vocab-size", type=int, default=8000, help="random words in the dictionary")
    parser.add_argument("--seed", type=int, default=1, help="seed of the words, masks and weights")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    parser.add_argument("--skip-check", action="store_true", help="skip the naive-vs-one-pass PAR loss check")
    args = parser.parse_args()
    if args.tokens < SPECIAL_TOKENS_PER_PAIR + 2:
        parser.error(f"--tokens must be at least {SPECIAL_TOKENS_PER_PAIR + 2} (two one-word sentences)")
    for name in ("batch_size", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def build_pairs(dictionary: Dictionary, num_items: int, tokens: int, seed: int) -> SegmentPairDataset:
    """Blocks of random sentences, each ending in ``eos``, whose pair items are exactly ``tokens`` long."""
    rng = np.random.default_rng(seed)
    words_per_item = tokens - SPECIAL_TOKENS_PER_PAIR
    mask_idx = dictionary.index(MASK_SYMBOL)
    blocks = []
    for _ in range(num_items):
        lengths = []
        while sum(lengths) < words_per_item:
            lengths.append(int(rng.integers(SENTENCE_LENGTHS[0], SENTENCE_LENGTHS[1] + 1)))
        lengths[-1] -= sum(lengths) - words_per_item
        if len(lengths) < 2 or lengths[-1] == 0:  # a pair needs two non-empty sentences
            lengths = [words_per_item // 2, words_per_item - words_per_item // 2]
        sentences = [
            np.append(rng.integers(dictionary.nspecial, mask_idx, size=n), dictionary.eos()) for n in lengths
        ]
        blocks.append(torch.from_numpy(np.concatenate(sentences).astype(np.int64)))
    pairs = SegmentPairDataset(
        ListDataset(blocks, np.array([len(b) for b in blocks])), dictionary, tokens, seed
    )
    for i in range(num_items):
        if len(pairs[i]["tokens"]) != tokens:
            raise RuntimeError(f"pair {i} has {len(pairs[i]['tokens'])} tokens, expected {tokens}")
    return pairs


def build_model(arch: str, dictionary: Dictionary, tokens: int) -> UniLMv2Model:
    """The registered architecture's sizes; position table long enough for ``tokens``."""
    cfg_args = argparse.Namespace(max_positions=tokens)
    ARCH_CONFIG_REGISTRY[arch](cfg_args)  # fills only what is unset
    return UniLMv2Model(UniLMv2Config(**vars(cfg_args)), dictionary)


def naive_step_items(item: Dict, pad: int) -> List[Dict]:
    """Per-step items ``[context | originals of steps < i | [P] of step i]`` cut from a one-pass item.

    Position, segment, kind and step ids are kept, so the collater's ``masks.pmlm_mask``
    gives each [P] exactly what it sees in the one-pass layout. Only [P] tokens are targets.
    """
    kind, step = item["kind"], item["step"]
    is_context = kind.eq(CONTEXT)
    out = []
    for i in range(1, int(step.max()) + 1):
        keep = is_context | (kind.eq(ORIGINAL) & step.lt(i)) | (kind.eq(PSEUDO) & step.eq(i))
        sample = {k: item[k][keep] for k in ("source", "target", "positions", "segments", "kind", "step")}
        sample["target"] = sample["target"].masked_fill(sample["kind"].eq(CONTEXT), pad)
        sample["id"] = item["id"]
        sample["num_masked"] = int(sample["kind"].eq(PSEUDO).sum())
        sample["num_par_skipped"] = 0
        out.append(sample)
    return out


def collate(dataset: PMLMDataset, samples: List[Dict], device: torch.device) -> Batch:
    """The dataset's collater, plus each token's factorization step (for the loss check)."""
    batch = dataset.collater(samples)
    batch["step"] = data_utils.collate_tokens([s["step"] for s in samples], 0)
    return _to(batch, device)


def _to(batch, device):
    if isinstance(batch, dict):
        return {k: _to(v, device) for k, v in batch.items()}
    return batch.to(device) if torch.is_tensor(batch) else batch


def fresh_items(dataset: PMLMDataset, indices) -> List[Dict]:
    """Items built now (a seeded dataset builds every item afresh on each access; for the data-time
    column)."""
    return [dataset[i] for i in indices]


def build_batches(variant: str, datasets: Dict[str, PMLMDataset], indices, pad, device) -> List[Batch]:
    """All batches one train step of ``variant`` consumes (one, or one per factorization step)."""
    if variant != NAIVE:
        return [collate(datasets[variant], fresh_items(datasets[variant], indices), device)]
    per_item = [naive_step_items(item, pad) for item in fresh_items(datasets[PMLM], indices)]
    num_steps = max(len(steps) for steps in per_item)
    return [
        collate(datasets[PMLM], [steps[k] for steps in per_item if k < len(steps)], device)
        for k in range(num_steps)
    ]


def train_step(model, optimizer, batches: List[Batch], sync: Callable[[], None]):
    """Forward, loss and backward per batch (gradients accumulate), then one Adam step.

    Returns seconds spent in forward/backward and in the optimizer step.
    """
    start = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    for batch in batches:
        net_input = batch["net_input"]
        logits, _ = model(**net_input)  # N x V over the predicted positions
        loss, _ = token_losses(logits, batch["target"][net_input["masked_tokens"]])
        loss.sum().backward()
    sync()
    middle = time.perf_counter()
    optimizer.step()
    sync()
    return middle - start, time.perf_counter() - middle


@torch.no_grad()
def par_losses(model, batches: List[Batch]) -> Dict[tuple, float]:
    """Loss of every [P] prediction, keyed by (item id, factorization step, position)."""
    out = {}
    for batch in batches:
        net_input = batch["net_input"]
        predicted = net_input["masked_tokens"]
        logits, _ = model(**net_input)
        loss, _ = token_losses(logits, batch["target"][predicted])
        rows, cols = predicted.nonzero(as_tuple=True)  # row-major, the order of `logits`
        is_par = batch["par_mask"][predicted]
        for r, c, value, par in zip(rows.tolist(), cols.tolist(), loss.tolist(), is_par.tolist()):
            if par:
                key = (int(batch["id"][r]), int(batch["step"][r, c]), int(net_input["positions"][r, c]))
                out[key] = value
    return out


def check_par_losses(model, one_pass: List[Batch], naive: List[Batch]):
    """Max |difference| of the [P] losses in both layouts (dropout off), their count, keys missing."""
    model.eval()
    expected, got = par_losses(model, one_pass), par_losses(model, naive)
    model.train()
    diffs = [abs(value - expected[key]) for key, value in got.items() if key in expected]
    return max(diffs, default=0.0), len(diffs), [key for key in got if key not in expected]


def run_interleaved(model, optimizer, batches, rebuild, args, sync):
    """Seconds per full train step (naive: extrapolated) and per batch build, per variant.

    Every repetition runs AE, PMLM, naive, the next one the reverse, so PMLM always
    runs next to both variants it is compared with, each pair in alternating order.
    """
    variants = list(batches)
    num_steps = len(batches[NAIVE])
    timed_steps = min(args.naive_steps_limit or num_steps, num_steps)
    times = {v: [] for v in variants}
    data_times = {v: [] for v in variants}
    for rep in range(args.warmup + args.repeats):
        for variant in variants if rep % 2 == 0 else variants[::-1]:
            start = time.perf_counter()
            rebuild(variant)
            data_seconds = time.perf_counter() - start
            run = batches[variant][:timed_steps] if variant == NAIVE else batches[variant]
            forward_backward, step = train_step(model, optimizer, run, sync)
            scale = num_steps / timed_steps if variant == NAIVE else 1.0
            if rep >= args.warmup:
                times[variant].append(forward_backward * scale + step)
                data_times[variant].append(data_seconds)
    return times, data_times


def describe_lengths(values: List[int]) -> str:
    return "/".join(str(v) for v in values)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads or os.cpu_count())
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    torch.manual_seed(args.seed)

    dictionary = build_dictionary(args.vocab_size)
    mask_idx = dictionary.index(MASK_SYMBOL)
    pad = dictionary.pad()
    pairs = build_pairs(dictionary, args.batch_size, args.tokens, args.seed)
    datasets = {
        AE: PMLMDataset(pairs, dictionary, mask_idx, args.seed, ae=True, par=False),
        PMLM: PMLMDataset(pairs, dictionary, mask_idx, args.seed, ae=True, par=True),
    }
    indices = list(range(args.batch_size))
    variants = [AE, PMLM, NAIVE]
    batches = {v: build_batches(v, datasets, indices, pad, device) for v in variants}

    model = build_model(args.arch, dictionary, args.tokens).to(device)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    cfg = model.cfg
    num_steps = len(batches[NAIVE])
    timed_steps = min(args.naive_steps_limit or num_steps, num_steps)
    extrapolated = timed_steps < num_steps

    items = [datasets[PMLM][i] for i in indices]
    masked = [it["num_masked"] for it in items]
    steps_per_item = [int(it["step"].max()) for it in items]
    appended = [int(it["kind"].ne(CONTEXT).sum()) for it in items]
    context = [int(it["kind"].eq(CONTEXT).sum()) for it in items]
    naive_appended = [
        int(b["net_input"]["positions"].size(1)) - min(context) for b in batches[NAIVE]
    ]  # padded length beyond the context, per forward

    print("unilm_fairseq PMLM train-step benchmark")
    print(machine_line(device))
    print(f"load avg: {load_average()} (1/5/15 min) at start")
    threads = torch.get_num_threads()
    busy = busy_warning(
        threads,
        "and the ratios unreliable (rerun when idle" + (", or with --threads 1)" if threads > 1 else ")"),
    )
    print(
        f"model   : {args.arch}: {cfg.encoder_layers} layers, {cfg.encoder_embed_dim} hidden, "
        f"{cfg.encoder_attention_heads} heads, FFN {cfg.encoder_ffn_embed_dim}, dropout {cfg.dropout}, "
        f"rel-pos bins {cfg.rel_pos_bins}; vocab {len(dictionary)}; "
        f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters; Adam"
    )
    print(
        f"batch   : {args.batch_size} x {args.tokens}-token blocks; masked tokens per block "
        f"{describe_lengths(masked)}; factorization steps per block {describe_lengths(steps_per_item)}"
    )
    print(
        f"timing  : {args.warmup} warmup + {args.repeats} timed repetitions, variants interleaved "
        f"(order AE, PMLM, naive, then reversed)"
    )

    check = None if args.skip_check else check_par_losses(model, batches[PMLM], batches[NAIVE][:timed_steps])
    times, data_times = run_interleaved(
        model, optimizer, batches, lambda v: build_batches(v, datasets, indices, pad, device), args, sync
    )

    median = {v: statistics.median(times[v]) for v in variants}
    rows = [
        (
            AE,
            "1",
            f"{describe_lengths(context)} + 0",
            batches[AE][0]["net_input"]["positions"].size(1),
            int(batches[AE][0]["net_input"]["masked_tokens"].sum()),
        ),
        (
            PMLM,
            "1",
            f"{describe_lengths(context)} + {describe_lengths(appended)}",
            batches[PMLM][0]["net_input"]["positions"].size(1),
            int(batches[PMLM][0]["net_input"]["masked_tokens"].sum()),
        ),
        (
            NAIVE,
            f"{num_steps}" + (f" ({timed_steps} timed)" if extrapolated else ""),
            f"{min(context)} + {min(naive_appended)}..{max(naive_appended)}",
            round(statistics.mean(b["net_input"]["positions"].size(1) for b in batches[NAIVE])),
            sum(int(b["net_input"]["masked_tokens"].sum()) for b in batches[NAIVE]),
        ),
    ]
    print()
    header = (
        f"{'variant':<15}{'forwards':>16}  {'tokens/seq (context + appended)':<34}{'padded L':>9}"
        f"{'predicted':>10}{'data ms':>9}{'step s (median)':>17}{'min..max':>15}"
    )
    print(header)
    print("-" * len(header))
    for name, forwards, lengths, padded, predicted in rows:
        note = "  extrapolated" if name == NAIVE and extrapolated else ""
        print(
            f"{name:<15}{forwards:>16}  {lengths:<34}{padded:>9}{predicted:>10}"
            f"{statistics.median(data_times[name]) * 1e3:>9.1f}{median[name]:>17.3f}"
            f"{min(times[name]):>8.3f}..{max(times[name]):<6.3f}{note}"
        )
    ae_len, pmlm_len = rows[0][3], rows[1][3]
    print(
        f"(padded length PMLM/AE = {pmlm_len / ae_len:.2f}: linear layers scale ~{pmlm_len / ae_len:.2f}x, "
        f"attention scores ~{(pmlm_len / ae_len) ** 2:.2f}x)"
    )
    if extrapolated:
        print(
            f"(naive PAR: forward+backward of the first {timed_steps} of {num_steps} steps, scaled by "
            f"{num_steps}/{timed_steps}, plus one Adam step; the first steps are the shortest, so this "
            f"underestimates naive PAR)"
        )

    def ratio_row(label, numerator, denominator, target, at_most, digits):
        per_rep = [n / d for n, d in zip(times[numerator], times[denominator])]
        value = statistics.median(per_rep)
        of_minima = min(times[numerator]) / min(times[denominator])
        passed = value <= target if at_most else value >= target
        print(
            f"{label:<34}{value:>8.{digits}f}{of_minima:>10.{digits}f}"
            f"{('<= ' if at_most else '>= ') + str(target):>10}  {'PASS' if passed else 'FAIL':<6}  "
            + " ".join(f"{r:.{digits}f}" for r in per_rep)
        )

    print()
    print(f"{'ratio':<34}{'median':>8}{'of minima':>10}{'target':>10}  result  per repetition")
    ratio_row("PMLM / AE", PMLM, AE, PMLM_PER_AE_TARGET, True, 2)
    label = "naive PAR / PMLM" + (" (extrapolated)" if extrapolated else "")
    ratio_row(label, NAIVE, PMLM, NAIVE_PER_PMLM_TARGET, False, 1)
    print("(median: of the per-repetition ratios, which decides PASS/FAIL; of minima: fastest / fastest)")
    if check is not None:
        worst, count, missing = check
        ok = worst <= CHECK_TOLERANCE and not missing
        print(
            f"check: naive [P] losses equal one-pass PAR losses (dropout off): {count} predictions of "
            f"{timed_steps} steps, max |diff| {worst:.2e} (tolerance {CHECK_TOLERANCE:g}) "
            f"{'PASS' if ok else 'FAIL'}"
            + (f", {len(missing)} missing from the one-pass layout" if missing else "")
        )
    print(f"load avg: {load_average()} (1/5/15 min) at end")
    if busy:
        print(busy)


if __name__ == "__main__":
    main()
