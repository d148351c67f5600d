#!/usr/bin/env python
"""Beam-search decoding cost of UniLM s2s-ft: K/V cache against recompute, and against fairseq's transformer.

Targets (project issue), same sources, same beam, same output length:

* cached decoding is at least 3x faster than recomputing the whole prefix
  every step (``SequenceGenerator`` with ``model.has_incremental = False``);
* per generated token, cached decoding costs at most 1.2x fairseq's own
  ``transformer`` of the same width and the same total layer count (e.g. a
  6-layer UniLM against 3 encoder + 3 decoder layers), timed in the same run.

``--dtype`` casts both models (weights and computation) to float32, float16 or bfloat16, as GPU users
decode; the cached/recompute agreement check is exact only in float32 (in half precision the two layouts
round differently, so the differences are shown, not judged).

All models have random weights (no training) and dropout 0, and share one
dictionary (``--vocab`` random words, the specials and ``<mask>``). Sources are
random words laid out by the library's ``Seq2SeqDataset`` ("[SOS] words [EOS]",
exactly ``--src-len`` tokens) and collated by its collater. Every variant runs
fairseq's ``SequenceGenerator`` directly (no n-gram blocking) with
``max_len_a=0`` and ``min_len = max_len_b = --tgt-len - 1``: EOS is forbidden
until the last step, which forces it, so every hypothesis has exactly
``--tgt-len`` tokens, the final [EOS] included, and every variant runs exactly
``--tgt-len`` decoder steps (counted and printed). A timed unit is one
``generate`` call on one batch: source encoding plus all decoder steps. "ms per
token" is that time over ``batch * tgt_len`` (per sequence per step; the beam
is inside). The encoder alone is timed next to it, so the decoder-only share is
shown too.

The fairseq transformer is ``TransformerModel.build_model`` on
``transformer.base_architecture`` with the UniLM model's width, heads, FFN size
and activation, half its layers in the encoder and half in the decoder, shared
embeddings (the UniLM LM head is tied too), post-LN (as UniLM), dropout 0.

Variants run interleaved, the order rotated every repetition, so machine noise
hits all; ratios are medians of per-repetition ratios. On a shared machine,
``--threads 1`` gives steadier numbers. This is a measurement, not a test.

Usage::

    python benchmarks/bench_decoding.py                         # unilmv2_small, 2 x 464 -> 48, beam 5
    python benchmarks/bench_decoding.py --arch unilmv2_tiny --repeats 2     # quick run
    python benchmarks/bench_decoding.py --recompute-steps-limit 8           # recompute: 8 steps, scaled
    python benchmarks/bench_decoding.py --profile                           # + per-op profile of one batch
    python benchmarks/bench_decoding.py --device cuda --dtype float16 --batch-size 64  # half precision

``--recompute-steps-limit N`` decodes only N steps in the recompute variant
and scales its time by ``tgt_len / N`` (marked "extrapolated"). Later steps
have longer prefixes, so this slightly underestimates recomputing.
"""

import argparse
import os
import statistics
import time
from typing import Callable, Dict, Tuple

import numpy as np
import torch
from bench_common import (
    build_dictionary,
    load_average,
    machine_line,
    print_counts_table,
    print_times_table,
    profiled,
)
from fairseq.data import Dictionary
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_INV_REGISTRY
from fairseq.models.transformer import TransformerModel
from fairseq.models.transformer import base_architecture as transformer_base_architecture
from fairseq.sequence_generator import SequenceGenerator

from unilm_fairseq.data.dictionary import MASK_SYMBOL
from unilm_fairseq.data.seq2seq.seq2seq_dataset import SOURCE_SPECIALS, Seq2SeqDataset
from unilm_fairseq.models.generation import STEP_MODES
from unilm_fairseq.models.unilmv2 import UniLMv2Config, UniLMv2Model
from unilm_fairseq.seq2seq_layout import METHODS, Seq2SeqSpec
from unilm_fairseq.tasks.unilm_seq2seq import _TokenList

RECOMPUTE_PER_CACHED_TARGET = 3.0  # recompute / cached, at least
CACHED_PER_TRANSFORMER_TARGET = 1.2  # cached / fairseq transformer per generated token, at most
# cached and recomputed beam scores are float32 sums over the same steps in different layouts
SCORE_TOLERANCE = 1e-3
# Hypotheses may differ only at a near tie: the other layout's float sums can order two candidates whose
# scores agree to float32 precision the other way (the base models here are random, so ties are common;
# ties flipped between eager and CUDA graph steps on the H200 run at score gaps of 2e-06 and below).
TIE_TOLERANCE = 1e-5
PROFILE_ROWS = 25

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}

CACHED, RECOMPUTE, TRANSFORMER = "unilm cached", "unilm recompute", "fairseq transformer"
VARIANTS = (CACHED, RECOMPUTE, TRANSFORMER)
STEPPED = "unilm {}"  # the cached variant with --decoding-step's mode

Batch = Dict[str, object]


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    archs = sorted(a for a in ARCH_MODEL_INV_REGISTRY["unilmv2"] if a != "unilmv2")
    parser.add_argument("--arch", default="unilmv2_small", choices=archs, help="UniLM model size")
    parser.add_argument(
        "--method",
        default="pseudo_masked",
        choices=METHODS,
        help="s2s-ft method the UniLM model decodes with",
    )
    parser.add_argument("--src-len", type=int, default=464, help="source tokens, [SOS] and [EOS] included")
    parser.add_argument(
        "--tgt-len", type=int, default=48, help="output tokens (= decoder steps), [EOS] included"
    )
    parser.add_argument("--beam", type=int, default=5, help="beam size")
    parser.add_argument("--batch-size", type=int, default=2, help="sources per generate call")
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions of every variant")
    parser.add_argument("--warmup", type=int, default=1, help="untimed repetitions first (also the checks)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all logical CPUs)")
    parser.add_argument("--vocab", type=int, default=8000, help="random words in the shared dictionary")
    parser.add_argument(
        "--recompute-steps-limit",
        type=int,
        default=0,
        help="decode only the first N steps of the recompute variant and extrapolate (0: all)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the sources and weights")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=sorted(DTYPES),
        help="weights and computation of both models (default float32)",
    )
    parser.add_argument(
        "--decoding-step",
        default="eager",
        choices=STEP_MODES,
        help="also time cached decoding with these steps (the task's --decoding-step): static, or "
        "cuda_graph (replayed CUDA graphs; on a CPU device it runs eagerly), beside the eager steps",
    )
    parser.add_argument(
        "--profile", action="store_true", help="after timing, profile one batch of cached and transformer"
    )
    args = parser.parse_args()
    if args.src_len <= SOURCE_SPECIALS:
        parser.error(f"--src-len must be more than {SOURCE_SPECIALS} ([SOS] and [EOS])")
    for name in ("tgt_len", "beam", "batch_size", "repeats", "vocab"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.recompute_steps_limit < 0:
        parser.error("--recompute-steps-limit must be at least 0")
    return args


def build_batch(dictionary: Dictionary, args, device) -> Batch:
    """``batch_size`` sources of random words, exactly ``src_len`` tokens each, by the library's collater."""
    rng = np.random.default_rng(args.seed)
    words = args.src_len - SOURCE_SPECIALS
    first_word, mask_idx = dictionary.nspecial, dictionary.index(MASK_SYMBOL)
    lines = [  # as fairseq-preprocess stores them: words then </s>
        torch.from_numpy(np.append(rng.integers(first_word, mask_idx, size=words), dictionary.eos()))
        for _ in range(args.batch_size)
    ]
    spec = Seq2SeqSpec(args.method, args.src_len, args.tgt_len)
    dataset = Seq2SeqDataset(_TokenList(lines), None, dictionary, spec)
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    src_tokens = batch["net_input"]["src_tokens"]
    if src_tokens.shape != (args.batch_size, args.src_len):
        raise RuntimeError(
            f"sources are {tuple(src_tokens.shape)}, expected {(args.batch_size, args.src_len)}"
        )
    batch["net_input"] = {k: v.to(device) for k, v in batch["net_input"].items()}
    return batch


def build_unilm(args, dictionary: Dictionary) -> UniLMv2Model:
    """The registered architecture's sizes, dropout 0, a position table long enough for source + output."""
    cfg_args = argparse.Namespace(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    ARCH_CONFIG_REGISTRY[args.arch](cfg_args)  # fills only what is unset
    cfg_args.max_positions = max(cfg_args.max_positions, args.src_len + args.tgt_len)
    cfg_args.seq2seq_method = args.method
    return UniLMv2Model(UniLMv2Config(**vars(cfg_args)), dictionary)


class _DictionaryTask:
    """What ``TransformerModel.build_model`` reads from a task."""

    def __init__(self, dictionary: Dictionary):
        self.source_dictionary = self.target_dictionary = dictionary


def build_transformer(cfg: UniLMv2Config, args, dictionary: Dictionary) -> TransformerModel:
    """fairseq's transformer: the UniLM width, heads, FFN and activation; its layers split encoder/decoder.

    An odd layer count gives the encoder the extra layer.
    """
    t_args = argparse.Namespace(
        encoder_layers=(cfg.encoder_layers + 1) // 2,
        decoder_layers=cfg.encoder_layers // 2,
        encoder_embed_dim=cfg.encoder_embed_dim,
        decoder_embed_dim=cfg.encoder_embed_dim,
        encoder_ffn_embed_dim=cfg.encoder_ffn_embed_dim,
        decoder_ffn_embed_dim=cfg.encoder_ffn_embed_dim,
        encoder_attention_heads=cfg.encoder_attention_heads,
        decoder_attention_heads=cfg.encoder_attention_heads,
        activation_fn=str(cfg.activation_fn),
        share_all_embeddings=True,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        max_source_positions=max(1024, args.src_len),
        max_target_positions=max(1024, args.tgt_len + 1),
    )
    transformer_base_architecture(t_args)  # fills only what is unset
    return TransformerModel.build_model(t_args, _DictionaryTask(dictionary))


def build_generator(model, dictionary: Dictionary, beam: int, steps: int, incremental: bool):
    """Exactly ``steps`` decoder calls: EOS is forbidden before the last step, which forces it."""
    generator = SequenceGenerator(
        [model], dictionary, beam_size=beam, max_len_a=0, max_len_b=steps - 1, min_len=steps - 1
    )
    if not incremental:
        generator.model.has_incremental = False  # the decoder recomputes the whole prefix every step
    return generator


class SteppedGenerator:
    """``generator``, with the UniLM decoder's steps in ``mode`` during its generate calls (eager after)."""

    def __init__(self, generator, decoder, mode: str):
        self.generator, self.decoder, self.mode = generator, decoder, mode

    def generate(self, models, batch):
        self.decoder.step_mode = self.mode
        try:
            return self.generator.generate(models, batch)
        finally:
            self.decoder.step_mode = "eager"


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def checked_run(generator, model, batch: Batch, steps: int):
    """One untimed generate call; returns its outputs and the number of decoder calls it made."""
    calls = []
    decoder, forward = model.decoder, model.decoder.forward

    def counted(*inputs, **kwargs):
        calls.append(1)
        return forward(*inputs, **kwargs)

    decoder.forward = counted  # the generator calls decoder.forward directly, bypassing hooks
    try:
        outputs = generator.generate([model], batch)
    finally:
        del decoder.forward
    lengths = {len(hypo["tokens"]) for hypos in outputs for hypo in hypos}
    if lengths != {steps}:
        raise RuntimeError(f"hypotheses of lengths {sorted(lengths)}, expected {steps} each")
    return outputs, len(calls)


def compare_outputs(cached, recomputed):
    """Hypotheses that differ between cached and recomputed decoding, those of them whose score is not
    within TIE_TOLERANCE of the other's at the same rank, and the largest score difference."""
    differing, untied, worst = 0, 0, 0.0
    for hypos_a, hypos_b in zip(cached, recomputed):
        for a, b in zip(hypos_a, hypos_b):
            gap = abs(float(a["score"]) - float(b["score"]))
            if not torch.equal(a["tokens"], b["tokens"]):
                differing += 1
                untied += gap > TIE_TOLERANCE
            worst = max(worst, gap)
    return differing, untied, worst


def print_check(outputs, reference, name: str, reference_name: str, args, half_note: str) -> None:
    """The check line of ``outputs`` against ``reference``: judged in float32, shown in half precision."""
    differing, untied, worst = compare_outputs(outputs, reference)
    found = f"{differing} of {args.batch_size * args.beam} hypotheses differ"
    if differing:
        found += f" ({differing - untied} of them ties: same-rank scores within {TIE_TOLERANCE:g})"
    found += f", max |score diff| {worst:.2e}"
    if DTYPES[args.dtype] == torch.float32:
        verdict = "PASS" if untied == 0 and worst <= SCORE_TOLERANCE else "FAIL"
        print(f"check   : {name} == {reference_name}: {found} (tolerance {SCORE_TOLERANCE:g}) {verdict}")
    else:
        print(
            f"check   : {name} vs {reference_name} in {args.dtype}: {found} (shown, not judged: {half_note})"
        )


def run_interleaved(generators, models, batch, scales, args, sync: Callable[[], None]):
    """Seconds per generate call (scaled where extrapolated) and per encoder call, and (CUDA) peak
    bytes allocated during a generate call, per variant.

    Repetition ``r`` runs the variants rotated by ``r``, so each runs first, second and last in turn.
    """
    variants = tuple(generators)
    times = {v: [] for v in variants}
    encoder_times = {v: [] for v in variants}
    peak_bytes = {v: 0 for v in variants}
    net_input = batch["net_input"]
    device = net_input["src_tokens"].device
    for rep in range(args.warmup + args.repeats):
        shift = rep % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            generator, model = generators[variant], models[variant]
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            sync()
            start = time.perf_counter()
            generator.generate([model], batch)
            sync()
            middle = time.perf_counter()
            if device.type == "cuda":
                peak_bytes[variant] = max(peak_bytes[variant], torch.cuda.max_memory_allocated(device))
            with torch.no_grad():
                model.encoder(net_input["src_tokens"], src_lengths=net_input["src_lengths"])
            sync()
            end = time.perf_counter()
            if rep >= args.warmup:
                times[variant].append((middle - start) * scales[variant])
                encoder_times[variant].append(end - middle)
    return times, encoder_times, peak_bytes


def profile_one(generator, model, batch: Batch, label: str) -> Tuple[Dict[str, int], Dict[str, float]]:
    """:func:`bench_common.profiled` over one generate call: its counts and milliseconds by component."""
    on_gpu = next(model.parameters()).is_cuda
    return profiled(lambda: generator.generate([model], batch), on_gpu, f"{label}, one batch", PROFILE_ROWS)


def profile_report(profiles, steps: int, on_gpu: bool) -> None:
    """Per decoder step (one generate call's :func:`profile_one` over its steps, the encoder included), the
    counts and then the milliseconds by component, side by side."""
    per_step = {name: {key: value / steps for key, value in c.items()} for name, (c, _) in profiles.items()}
    print_counts_table(f"per step ({steps} per call)", per_step, on_gpu, ".1f")
    ms = {name: {key: value / steps for key, value in t.items()} for name, (_, t) in profiles.items()}
    print_times_table(f"ms per step, {'device' if on_gpu else 'CPU'} time", ms)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads or os.cpu_count())
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    torch.manual_seed(args.seed)

    dictionary = build_dictionary(args.vocab)
    batch = build_batch(dictionary, args, device)
    dtype = DTYPES[args.dtype]
    unilm = build_unilm(args, dictionary).to(device=device, dtype=dtype).eval()
    transformer = build_transformer(unilm.cfg, args, dictionary).to(device=device, dtype=dtype).eval()
    cfg, t_cfg = unilm.cfg, transformer.cfg

    steps = args.tgt_len
    recompute_steps = min(args.recompute_steps_limit or steps, steps)
    extrapolated = recompute_steps < steps
    models = {CACHED: unilm, RECOMPUTE: unilm, TRANSFORMER: transformer}
    generators = {
        CACHED: build_generator(unilm, dictionary, args.beam, steps, incremental=True),
        RECOMPUTE: build_generator(unilm, dictionary, args.beam, recompute_steps, incremental=False),
        TRANSFORMER: build_generator(transformer, dictionary, args.beam, steps, incremental=True),
    }
    scales = {CACHED: 1.0, RECOMPUTE: steps / recompute_steps, TRANSFORMER: 1.0}
    decoder_steps = {CACHED: steps, RECOMPUTE: recompute_steps, TRANSFORMER: steps}
    stepped = None
    if args.decoding_step != "eager":
        stepped = STEPPED.format(args.decoding_step)
        generators[stepped] = SteppedGenerator(generators[CACHED], unilm.decoder, args.decoding_step)
        models[stepped], scales[stepped], decoder_steps[stepped] = unilm, 1.0, steps
    variants = tuple(generators)

    print("unilm_fairseq decoding benchmark (fairseq SequenceGenerator, beam search)")
    print(machine_line(device))
    print(f"load avg: {load_average()} (1/5/15 min) at start")
    print(
        f"unilm   : {args.arch}, method {args.method}: {cfg.encoder_layers} layers, {cfg.encoder_embed_dim} "
        f"hidden, {cfg.encoder_attention_heads} heads, FFN {cfg.encoder_ffn_embed_dim}, {cfg.activation_fn}, "
        f"rel-pos bins {cfg.rel_pos_bins}, {cfg.max_positions} positions; "
        f"{count_parameters(unilm) / 1e6:.2f}M parameters"
    )
    print(
        f"fairseq : transformer: {t_cfg.encoder.layers} encoder + {t_cfg.decoder.layers} decoder layers, "
        f"{t_cfg.encoder.embed_dim} hidden, {t_cfg.encoder.attention_heads} heads, FFN "
        f"{t_cfg.encoder.ffn_embed_dim}, {t_cfg.activation_fn}, shared embeddings, "
        f"{'pre' if t_cfg.encoder.normalize_before else 'post'}-LN; "
        f"{count_parameters(transformer) / 1e6:.2f}M parameters"
    )
    print(
        f"decoding: {args.batch_size} sources x {args.src_len} tokens -> {args.tgt_len} tokens ([EOS] "
        f"included), beam {args.beam}; vocab {len(dictionary)}; min_len = max_len_b = {steps - 1}, "
        f"max_len_a 0; both models in {args.dtype}"
    )
    print(
        f"timing  : {args.warmup} warmup + {args.repeats} timed repetitions, variants interleaved "
        f"(order rotated every repetition); one unit = one generate call on the batch"
    )

    # one untimed run each: exactly the expected decoder calls and fixed-length hypotheses
    outputs, calls = {}, {}
    for variant in variants:
        outputs[variant], calls[variant] = checked_run(
            generators[variant], models[variant], batch, decoder_steps[variant]
        )
        if calls[variant] != decoder_steps[variant]:
            raise RuntimeError(
                f"{variant}: {calls[variant]} decoder calls, expected {decoder_steps[variant]}"
            )
    print(
        "steps   : decoder calls per generate call: "
        + ", ".join(f"{v} {calls[v]}" for v in variants)
        + (
            f" (recompute limited to {recompute_steps}, time scaled by {steps}/{recompute_steps})"
            if extrapolated
            else ""
        )
        + "; every hypothesis has exactly its step count of tokens"
    )
    if not extrapolated:
        print_check(outputs[CACHED], outputs[RECOMPUTE], "cached", "recompute", args, "see --help")
    if stepped is not None:
        print_check(
            outputs[stepped],
            outputs[CACHED],
            args.decoding_step,
            "cached",
            args,
            "their sums run in another order",
        )

    times, encoder_times, peak_bytes = run_interleaved(generators, models, batch, scales, args, sync)
    median = {v: statistics.median(times[v]) for v in variants}
    tokens_per_batch = args.batch_size * args.tgt_len

    print()
    on_cuda = device.type == "cuda"
    header = (
        f"{'variant':<21}{'steps':>6}{'s/batch (median)':>18}{'min..max':>17}{'encoder s':>11}"
        f"{'ms/token':>10}{'decoder-only ms/token':>23}{'samples/s':>11}"
        + (f"{'peak MiB':>10}" if on_cuda else "")
    )
    print(header)
    print("-" * len(header))
    for variant in variants:
        enc = statistics.median(encoder_times[variant])
        note = "  extrapolated" if variant == RECOMPUTE and extrapolated else ""
        print(
            f"{variant:<21}{decoder_steps[variant]:>6}{median[variant]:>18.3f}"
            f"{min(times[variant]):>8.3f}..{max(times[variant]):<7.3f}{enc:>11.3f}"
            f"{median[variant] / tokens_per_batch * 1e3:>10.2f}"
            f"{(median[variant] - enc) / tokens_per_batch * 1e3:>23.2f}"
            f"{args.batch_size / median[variant]:>11.2f}"
            + (f"{peak_bytes[variant] / 2**20:>10.0f}" if on_cuda else "")
            + note
        )
    print(
        f"(ms/token: s/batch / ({args.batch_size} sources x {args.tgt_len} steps), beam {args.beam} inside; "
        f"decoder-only: s/batch less the encoder alone; samples/s: sources per second"
        + ("; peak MiB: max_memory_allocated during one generate call, weights included)" if on_cuda else ")")
    )
    if extrapolated:
        print(
            f"(unilm recompute: {recompute_steps} of {steps} steps decoded, time scaled by {steps}/"
            f"{recompute_steps}; later steps have longer prefixes, so this underestimates recomputing)"
        )

    def ratio_row(label, numerator, denominator, target, at_most) -> float:
        """Prints the ratio's row and returns its median."""
        per_rep = [n / d for n, d in zip(times[numerator], times[denominator])]
        value = statistics.median(per_rep)
        of_minima = min(times[numerator]) / min(times[denominator])
        passed = value <= target if at_most else value >= target
        print(
            f"{label:<36}{value:>8.2f}{of_minima:>10.2f}"
            f"{('<= ' if at_most else '>= ') + str(target):>10}  {'PASS' if passed else 'FAIL':<6}  "
            + " ".join(f"{r:.2f}" for r in per_rep)
        )
        return value

    print()
    print(f"{'ratio':<36}{'median':>8}{'of minima':>10}{'target':>10}  result  per repetition")
    label = "recompute / cached" + (" (extrapolated)" if extrapolated else "")
    recompute = ratio_row(label, RECOMPUTE, CACHED, RECOMPUTE_PER_CACHED_TARGET, False)
    per_token = ratio_row(
        "cached / transformer (per token)", CACHED, TRANSFORMER, CACHED_PER_TRANSFORMER_TARGET, True
    )
    decoder_only = [
        (c - ce) / (t - te)
        for c, ce, t, te in zip(
            times[CACHED], encoder_times[CACHED], times[TRANSFORMER], encoder_times[TRANSFORMER]
        )
    ]
    encoder_only = [c / t for c, t in zip(encoder_times[CACHED], encoder_times[TRANSFORMER])]
    print(
        f"(informational: cached / transformer decoder-only {statistics.median(decoder_only):.2f}, "
        f"encoder alone {statistics.median(encoder_only):.2f})"
    )
    if stepped is not None:
        ratio_row(
            f"{args.decoding_step} / transformer (per token)", stepped, TRANSFORMER,
            CACHED_PER_TRANSFORMER_TARGET, True,
        )  # fmt: skip
        per_rep = [c / g for c, g in zip(times[CACHED], times[stepped])]
        print(f"(informational: cached / {stepped}, the speed-up: {statistics.median(per_rep):.2f})")
    print("(median: of the per-repetition ratios, which decides PASS/FAIL; of minima: fastest / fastest)")
    print(
        f"summary : samples/s unilm cached {args.batch_size / median[CACHED]:.2f}, fairseq transformer "
        f"{args.batch_size / median[TRANSFORMER]:.2f}; cached/transformer per token {per_token:.2f} "
        f"(target {CACHED_PER_TRANSFORMER_TARGET}); recompute/cached {recompute:.2f}"
        + ("" if stepped is None else f"; samples/s {stepped} {args.batch_size / median[stepped]:.2f}")
    )
    print(f"load avg: {load_average()} (1/5/15 min) at end")

    if args.profile:
        profiles = {
            CACHED: profile_one(generators[CACHED], unilm, batch, CACHED),
            TRANSFORMER: profile_one(generators[TRANSFORMER], transformer, batch, TRANSFORMER),
        }
        if stepped is not None:
            try:  # a graph captured under the profiler: should the device's tracer refuse it, say so
                profiles[stepped] = profile_one(generators[stepped], unilm, batch, stepped)
            except RuntimeError as error:
                print(f"profile: {stepped} could not be profiled ({error}); its timing above stands")
        profile_report(profiles, steps, on_cuda)


if __name__ == "__main__":
    main()
