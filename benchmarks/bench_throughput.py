#!/usr/bin/env python
"""Training throughput of UniLMv2 pre-training against fairseq's own RoBERTa, side by side in one run.

Targets, same data, same model size:

* ``--task pmlm --objectives ae`` (AE only) trains at least 1.0x RoBERTa's words/s;
* its peak memory is at most 1.1x RoBERTa's;
* a PMLM (AE+PAR) update takes at most 1.4x an AE-only update (issue 25, item 5).

Systems, all built through fairseq's own command-line parser, ``tasks.setup_task``,
``task.build_model``, ``task.build_criterion`` and ``optim.build_optimizer`` (Adam):

* ``roberta``: ``--task masked_lm --arch roberta_base --criterion masked_lm``;
* ``ae``: ``--task pmlm --objectives ae --arch unilmv2_base --criterion ae_par``;
* ``ae-norel``: the same with ``--rel-pos-bins 0`` (no relative position bias; shows what it costs);
* ``pmlm``: ``--objectives ae,par`` (full UniLMv2 PMLM).

Every system gets the same width, depth, FFN size, heads and position table
(``--layers/--dim/--ffn/--heads``, ``--max-positions`` = ``--tokens``), dropout 0.1
and attention dropout 0.1, GELU, post-LN, tied input/output embeddings and an LM head
(dense, GELU, LayerNorm, tied projection) applied only to the predicted tokens; the
same masking rate (``--mask-prob`` 0.15, 80/10/10) and no pooler (RoBERTa's
classification heads are only built for sentence prediction). Remaining differences
are the methods': UniLM adds segment embeddings, the relative position bias and a
per-example attention mask; PMLM masks spans (blockwise) where RoBERTa masks single
tokens, and RoBERTa's positions start at ``padding_idx + 1``.

Data: one random-word corpus (Zipf-distributed words, sentences of 8-40 words, long
documents) binarized once by ``fairseq-preprocess --only-source``, so all systems read
the same ``dict.txt`` (each task adds ``<mask>``) and the same ``train`` split, cut into
``--tokens``-token blocks with ``--sample-break-mode none`` (RoBERTa: ``<s>`` + 255
tokens; UniLM: "[SOS] A [EOS] B [EOS]"). Batches of ``--batch-size`` blocks come
from each task's own batch iterator and collater, built before timing (their build
time is its own column, measured as below).

Batch building ("data ms"): what one ``--num-workers`` data-loader worker does per
batch, ``dataset.collater([dataset[i] for i in batch])`` over the index lists of the
kept batches, timed in this process's CPU time (other processes on a shared machine
disturb it less than wall time; wall time is shown too) and thrown away. Then the same
as a worker sends it ("worker ms"): the build plus moving the batch's tensors to
shared memory, as the worker's pickler does. ``--data-rounds`` rounds of each, the
systems interleaved (the order reversed every round); per system the median over
batches and rounds, ratios the median of per-round ratios against RoBERTa.
``--data-only`` measures just this (no model is built), at base size with ``--tokens
512 --batch-size 32``, and sets it against a GPU step time (``--gpu-step-ms``, by
default issue 25's PMLM step at base size on an H100 in float32) for the worker
counts of fairseq's default ``--num-workers`` and of the pre-training recipe: with
``W`` workers, a batch is ready every ``worker ms / W`` (``W = 0``: the main process
builds it between steps). ``--reference DIR`` repeats the measurement in a child
process whose ``unilm_fairseq`` is ``DIR/unilm_fairseq`` (e.g. ``git archive HEAD
unilm_fairseq | tar -x -C DIR``), so old and new code appear side by side, each
against its own process's RoBERTa.

An update is fairseq-train's: ``task.train_step`` (forward, criterion, backward),
gradients divided by the sample size, the gradient norm (``clip_grad_norm``, no
clipping: where the ``--fp16`` loss scaler finds an overflow) and its finiteness check,
one Adam step. With ``--fp16`` every system runs as ``fairseq-train --fp16`` runs it:
half-precision weights and activations, fairseq's ``FP16Optimizer`` (float32 master
weights, dynamic loss scale from 128); an update that overflows is skipped, as the
trainer skips it, and counted. Words/s is fairseq's ``wps``: ``sample["ntokens"]`` (the
text tokens of the blocks, the same count for every system) over the update's seconds.
Each round runs ``--updates`` updates of every system, the order reversed every round
(A/B/C, C/B/A, ...) so machine noise hits all; ratios are medians of per-round ratios.

Model FLOPs and utilization: after the timing, one update on each kept batch runs under
``torch.utils.flop_counter`` (matrix products and attention, forward and backward, at the
shapes the implementation runs: padding and hidden keys included; its attention backward
counts recomputing the scores). FLOPs per update over the median seconds per update give
TFLOP/s; over the device's dense peak for the dtype the products run in (H100, H200, A100
from NVIDIA's data sheets, or ``--peak-tflops``), the model FLOP utilization (MFU).

``--profile``: after the timing, ``torch.profiler`` over one update of each system (CPU, and
CUDA on a GPU): per update the aten ops dispatched from Python and autograd, the tensor values
read back to the host, and on a GPU the kernels, copies and host-blocking syncs, side by side;
the milliseconds of device (or CPU) time by component (attention, matrix products, embeddings
and the bias table, copies and casts, layer norm, log-softmax and loss, the optimizer step, the
rest), and on a GPU the timed update against the device's busy time; then each system's most
expensive ops (by device time on a GPU, by CPU time otherwise).

Memory: on CUDA, ``torch.cuda.max_memory_allocated`` over each system's updates. On
CPU, torch's allocator is invisible to tracemalloc, so each system also runs alone in
a child process (same data, warm-up updates, then ``--updates`` updates) that reports
its peak RSS (``VmHWM``) and the growth of its peak RSS during the updates over its
RSS before them (the kernel's peak counter is reset first), i.e. what training adds on
top of the loaded model and optimizer state.

Usage::

    python benchmarks/bench_throughput.py --threads 1                    # 6 x 384, 256-token blocks, batch 8
    python benchmarks/bench_throughput.py --rounds 2 --updates 2 --no-memory   # quick
    python benchmarks/bench_throughput.py --profile                      # + per-op CPU profile of one update
    python benchmarks/bench_throughput.py --device cuda --rounds 5 --updates 20
    python benchmarks/bench_throughput.py --device cuda --fp16 --profile  # + FLOP utilization, kernel counts
    python benchmarks/bench_throughput.py --data-only --tokens 512 --batch-size 32 --reference /tmp/ref
"""

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
from bench_common import (
    busy_warning,
    counted_flops,
    load_average,
    machine_line,
    peak_tflops,
    print_counts_table,
    print_times_table,
    profiled,
)
from fairseq import optim, options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import unilm_fairseq

# the plugin this process imported: --user-dir must name the same package
PLUGIN_DIR = os.path.dirname(os.path.abspath(unilm_fairseq.__file__))
AE_PER_ROBERTA_TARGET = 1.0  # AE-only words/s / RoBERTa words/s, at least
MEMORY_PER_ROBERTA_TARGET = 1.1  # AE-only peak memory / RoBERTa peak memory, at most
PMLM_PER_AE_TARGET = 1.4  # seconds per PMLM (AE+PAR) update / per AE-only update, at most
SENTENCE_LENGTHS = (8, 40)  # words per sentence, inclusive
DOCUMENT_SENTENCES = 60  # sentences per document: long documents, so blocks are full
ZIPF_EXPONENT = 1.1
PROFILE_ROWS = 20
# issue 25: one PMLM (AE+PAR) update at base size (12 x 768, 512 tokens, batch 32) on an H100, float32
GPU_STEP_MS = 50.0
# issue 25: RoBERTa's batch build on that H100 machine's CPU, to scale this machine's ratios by
HOST_ROBERTA_MS = 15.6
# data-loader workers of examples/unilmv2_pretrain/continue_pretraining.sh (WORKERS, default 4)
RECIPE_WORKERS = 4
DATA_TARGET = 1.5  # AE and PMLM batch build / RoBERTa's, at most

ROBERTA, AE, AE_NOREL, PMLM = "roberta", "ae", "ae-norel", "pmlm"
SYSTEMS = (ROBERTA, AE, AE_NOREL, PMLM)
LABELS = {
    ROBERTA: "RoBERTa (masked_lm)",
    AE: "UniLMv2 AE only",
    AE_NOREL: "AE, rel_pos_bins 0",
    PMLM: "UniLMv2 PMLM (AE+PAR)",
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--layers", type=int, default=6, help="Transformer layers")
    parser.add_argument("--dim", type=int, default=384, help="hidden size")
    parser.add_argument("--ffn", type=int, default=1536, help="feed-forward inner size")
    parser.add_argument("--heads", type=int, default=6, help="attention heads")
    parser.add_argument("--tokens", type=int, default=256, help="tokens per block (and position table)")
    parser.add_argument("--batch-size", type=int, default=8, help="blocks per batch")
    parser.add_argument("--mask-prob", type=float, default=0.15, help="masking rate of every system")
    parser.add_argument("--batches", type=int, default=4, help="distinct batches per system, cycled")
    parser.add_argument("--updates", type=int, default=3, help="timed updates per system per round")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all logical CPUs)")
    parser.add_argument("--vocab", type=int, default=8000, help="distinct words in the corpus")
    parser.add_argument("--seed", type=int, default=1, help="seed of the corpus, masks and weights")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"comma-separated systems to run, from {','.join(SYSTEMS)} (roberta is always run)",
    )
    parser.add_argument("--no-memory", action="store_true", help="CPU: skip the per-system memory runs")
    parser.add_argument("--profile", action="store_true", help="after timing, profile one update of each")
    parser.add_argument(
        "--fp16", action="store_true", help="train every system as fairseq-train --fp16 does (half weights)"
    )
    parser.add_argument(
        "--peak-tflops", type=float, default=0.0, help="the device's peak TFLOP/s for MFU (0: listed GPUs)"
    )
    parser.add_argument("--data-rounds", type=int, default=10, help="rounds of timed batch building")
    parser.add_argument(
        "--data-only", action="store_true", help="time batch building only (no model), with the GPU context"
    )
    parser.add_argument(
        "--reference",
        default=None,
        metavar="DIR",
        help="also time batch building with DIR/unilm_fairseq (an older tree), in a child process",
    )
    parser.add_argument("--gpu-step-ms", type=float, default=GPU_STEP_MS, help="GPU step time, ms")
    parser.add_argument("--data-json", action="store_true", help=argparse.SUPPRESS)  # child: print JSON
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)  # a binarized corpus to reuse
    parser.add_argument("--memory-child", default=None, choices=SYSTEMS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {list(SYSTEMS)}")
    args.systems = [s for s in SYSTEMS if s == ROBERTA or s in systems]
    for name in ("layers", "dim", "ffn", "heads", "batch_size", "batches", "updates", "rounds", "vocab",
                 "data_rounds"):  # fmt: skip
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.dim % args.heads:
        parser.error("--dim must be divisible by --heads")
    if args.tokens < 8:
        parser.error("--tokens must be at least 8")
    return args


def write_corpus(path: str, args) -> None:
    """Random Zipf-distributed words, one sentence per line, documents separated by empty lines."""
    rng = np.random.default_rng(args.seed)
    # enough text for every system's batches, twice over
    needed = 2 * args.batches * args.batch_size * args.tokens
    ranks = np.arange(1, args.vocab + 1)
    probs = ranks**-ZIPF_EXPONENT
    probs /= probs.sum()
    written = 0
    with open(path, "w") as f:
        while written < needed:
            for _ in range(DOCUMENT_SENTENCES):
                n = int(rng.integers(SENTENCE_LENGTHS[0], SENTENCE_LENGTHS[1] + 1))
                words = rng.choice(args.vocab, size=n, p=probs)
                f.write(" ".join(f"w{w}" for w in words) + "\n")
                written += n + 1
            f.write("\n")


def binarize(workdir: str, args) -> str:
    """``fairseq-preprocess --only-source`` of the random corpus; returns the data directory."""
    text = os.path.join(workdir, "train.txt")
    write_corpus(text, args)
    dest = os.path.join(workdir, "bin")
    subprocess.run(
        [sys.executable, "-m", "fairseq_cli.preprocess", "--only-source", "--trainpref", text,
         "--destdir", dest, "--workers", "1"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return dest


def system_argv(system: str, data: str, args) -> List[str]:
    """``fairseq-train`` arguments of one system."""
    common = [
        data, "--seed", str(args.seed), "--batch-size", str(args.batch_size),
        "--tokens-per-sample", str(args.tokens), "--sample-break-mode", "none",
        "--mask-prob", str(args.mask_prob), "--leave-unmasked-prob", "0.1", "--random-token-prob", "0.1",
        "--encoder-layers", str(args.layers), "--encoder-embed-dim", str(args.dim),
        "--encoder-ffn-embed-dim", str(args.ffn), "--encoder-attention-heads", str(args.heads),
        "--max-positions", str(args.tokens), "--dropout", "0.1", "--attention-dropout", "0.1",
        "--activation-fn", "gelu", "--optimizer", "adam", "--lr", "1e-4", "--num-workers", "0",
    ]  # fmt: skip
    on_cpu = torch.device(args.device).type != "cuda"
    if on_cpu:
        common.append("--cpu")
    if args.fp16:  # fairseq flattens the float32 master weights into one CUDA buffer: not on a CPU
        common += ["--fp16"] + (["--fp16-no-flatten-grads"] if on_cpu else [])
    if system == ROBERTA:
        return common + ["--task", "masked_lm", "--arch", "roberta_base", "--criterion", "masked_lm"]
    unilm = common + ["--user-dir", PLUGIN_DIR, "--task", "pmlm",
                      "--arch", "unilmv2_base", "--criterion", "ae_par"]  # fmt: skip
    if system == AE:
        return unilm + ["--objectives", "ae"]
    if system == AE_NOREL:
        return unilm + ["--objectives", "ae", "--rel-pos-bins", "0"]
    return unilm + ["--objectives", "ae,par"]


class System:
    """One system's task, model, criterion, optimizer and pre-built batches (``with_model=False``: the
    task and the batches' indices only, for timing batch building)."""

    def __init__(self, name: str, data: str, args, device: torch.device, with_model: bool = True):
        self.name = name
        parser = options.get_training_parser()
        ns = options.parse_args_and_arch(parser, system_argv(name, data, args))
        cfg = convert_namespace_to_omegaconf(ns)
        utils.import_user_module(cfg.common)
        torch.manual_seed(args.seed)
        self.task = tasks.setup_task(cfg.task)
        self.task.load_dataset("train")
        # per round, the medians over the batches of: CPU and wall seconds building one; CPU seconds
        # building one and handing it on (moving its tensors to shared memory), as a worker does
        self.data_seconds: Dict[str, List[float]] = {"cpu": [], "wall": [], "worker": []}
        if not with_model:
            self.batch_indices = [s["id"].tolist() for s in self._batches(args, torch.device("cpu"))]
            return
        self.model = self.task.build_model(cfg.model).to(device)
        self.criterion = self.task.build_criterion(cfg.criterion).to(device)
        params = [p for p in self.model.parameters() if p.requires_grad]
        if cfg.common.fp16:  # as fairseq's Trainer sets up --fp16
            self.model, self.criterion = self.model.half(), self.criterion.half()
            self.optimizer = optim.FP16Optimizer.build_optimizer(cfg, params)
        else:
            self.optimizer = optim.build_optimizer(cfg.optimizer, params)
        self.dtype = next(self.model.parameters()).dtype
        self.overflows = 0  # --fp16 updates skipped by the loss scaler
        self.parameters = sum(p.numel() for p in params)
        self.batches = self._batches(args, device)
        self.batch_indices = [s["id"].tolist() for s in self.batches]
        self.update_num = 0

    def _batches(self, args, device):
        """The first ``--batches`` full batches of the task's own iterator."""
        iterator = self.task.get_batch_iterator(
            dataset=self.task.dataset("train"), max_tokens=None, max_sentences=args.batch_size,
            max_positions=None, seed=args.seed, num_workers=0,
        ).next_epoch_itr(shuffle=False)  # fmt: skip
        batches = []
        for sample in iterator:
            if sample["nsentences"] == args.batch_size:
                batches.append(utils.move_to_cuda(sample) if device.type == "cuda" else sample)
            if len(batches) == args.batches:
                break
        if len(batches) < args.batches:
            raise RuntimeError(f"{self.name}: only {len(batches)} full batches in the corpus")
        return batches

    def time_building(self, handoff: bool = False) -> None:
        """Builds every kept batch again (items, then the collater) and throws it away; records the
        medians over the batches in :attr:`data_seconds` (``cpu`` and ``wall``). With ``handoff``, as a
        data-loader worker does: each batch's tensors are also moved to shared memory, as the worker's
        pickler does to send it, and the CPU time of both is recorded (``worker``)."""
        dataset = self.task.dataset("train")
        seconds = {key: [] for key in self.data_seconds}
        for indices in self.batch_indices:
            wall, cpu = time.perf_counter(), time.process_time()
            batch = dataset.collater([dataset[i] for i in indices])
            if handoff:
                utils.apply_to_sample(lambda tensor: tensor.share_memory_(), batch)
                seconds["worker"].append(time.process_time() - cpu)
            else:
                seconds["cpu"].append(time.process_time() - cpu)
                seconds["wall"].append(time.perf_counter() - wall)
        for key, values in seconds.items():
            if values:
                self.data_seconds[key].append(statistics.median(values))

    def update(self, sample) -> None:
        """fairseq-train's update: task.train_step, gradients over the sample size, their norm (no
        clipping) and its finiteness check, one Adam step; an --fp16 overflow skips the step."""
        self.model.train()
        self.optimizer.zero_grad()
        _, sample_size, _ = self.task.train_step(
            sample, self.model, self.criterion, self.optimizer, self.update_num
        )
        self.optimizer.multiply_grads(1.0 / float(sample_size))
        try:
            grad_norm = self.optimizer.clip_grad_norm(0.0)
        except OverflowError:  # the loss scale was lowered; the trainer skips the update
            self.overflows += 1
        else:
            if not torch.isfinite(grad_norm).all():
                raise FloatingPointError(f"{self.name}: gradients are NaN/Inf")
            self.optimizer.step()
        self.update_num += 1

    def flops_per_update(self) -> float:
        """Model FLOPs of one update (:func:`counted_flops`), the mean over the kept batches."""
        return counted_flops(lambda: self.run(len(self.batches))) / len(self.batches)

    def run(self, updates: int) -> int:
        """``updates`` updates over the cycled batches; returns the text tokens they trained on."""
        tokens = 0
        for _ in range(updates):
            sample = self.batches[self.update_num % len(self.batches)]
            self.update(sample)
            tokens += int(sample["ntokens"])
        return tokens

    def shape(self):
        """Padded sequence length and predicted tokens per batch (medians over the batches)."""
        lengths, predicted = [], []
        for sample in self.batches:
            net_input = sample["net_input"]
            tokens = net_input["tokens"] if "tokens" in net_input else net_input["src_tokens"]
            lengths.append(tokens.size(1))
            pad = self.task.source_dictionary.pad()
            predicted.append(int(sample["target"].ne(pad).sum()))
        return int(statistics.median(lengths)), statistics.median(predicted)


def rss_kib(field: str) -> int:
    """``VmRSS`` or ``VmHWM`` of this process in KiB (0 where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS counter of this process (Linux: 5 > /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_child(args) -> None:
    """Runs one system alone and prints its peak RSS and what training added, as JSON."""
    torch.set_num_threads(args.threads or os.cpu_count())
    system = System(args.memory_child, args.data, args, torch.device("cpu"))
    system.run(max(1, args.warmup) * args.updates)  # optimizer state and allocator caches exist now
    before = rss_kib("VmRSS")
    can_reset = reset_peak_rss()
    system.run(args.updates)
    peak = rss_kib("VmHWM")
    print(json.dumps({"peak_mib": peak / 1024, "growth_mib": (peak - before) / 1024 if can_reset else None}))


def cpu_memory(args, data: str) -> Dict[str, dict]:
    """Each system alone in a child process: its peak RSS and growth during updates (MiB)."""
    out = {}
    script = os.path.abspath(__file__)
    for name in args.systems:
        cmd = [
            sys.executable, script, "--memory-child", name, "--data", data,
            "--layers", str(args.layers), "--dim", str(args.dim), "--ffn", str(args.ffn),
            "--heads", str(args.heads), "--tokens", str(args.tokens),
            "--batch-size", str(args.batch_size), "--mask-prob", str(args.mask_prob),
            "--batches", str(args.batches), "--updates", str(args.updates),
            "--warmup", str(args.warmup), "--threads", str(args.threads), "--vocab", str(args.vocab),
            "--seed", str(args.seed),
        ] + (["--fp16"] if args.fp16 else [])  # fmt: skip
        result = subprocess.run(cmd, check=True, capture_output=True, text=True)
        out[name] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


def run_rounds(systems: Dict[str, System], args, device, sync: Callable[[], None]):
    """Seconds per update, tokens per update and (CUDA) peak bytes, per system and round."""
    names = list(systems)
    seconds = {n: [] for n in names}
    words = {n: [] for n in names}
    cpu_words = {n: [] for n in names}
    peak = {n: 0 for n in names}
    for r in range(args.warmup + args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            system = systems[name]
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            sync()
            start, cpu_start = time.perf_counter(), time.process_time()
            tokens = system.run(args.updates)
            sync()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            if device.type == "cuda":
                peak[name] = max(peak[name], torch.cuda.max_memory_allocated(device))
            if r >= args.warmup:
                seconds[name].append(elapsed / args.updates)
                words[name].append(tokens / elapsed)
                cpu_words[name].append(tokens / cpu)
    return seconds, words, cpu_words, peak


def time_data_rounds(systems: Dict[str, "System"], rounds: int) -> None:
    """``rounds`` rounds of :meth:`System.time_building`, the systems interleaved, the order reversed
    every round (one untimed round first), then as many with the hand-off."""
    names = list(systems)
    for handoff in (False, True):
        for r in range(rounds + 1):
            for name in names if r % 2 == 0 else names[::-1]:
                systems[name].time_building(handoff)
    for system in systems.values():
        for values in system.data_seconds.values():
            del values[0]  # the warm-up round


def data_figures(systems: Dict[str, "System"]) -> Dict[str, dict]:
    """Per system and measure (``cpu``, ``wall``, ``worker``): the median ms per batch over the rounds
    and the median of per-round ratios to RoBERTa (and the per-round ratios)."""
    base = systems[ROBERTA].data_seconds
    figures = {}
    for name, system in systems.items():
        own = system.data_seconds
        figures[name] = {key: statistics.median(values) * 1e3 for key, values in own.items()}
        for key in own:
            ratios = [v / r for v, r in zip(own[key], base[key])]
            figures[name][key + "_ratio"] = statistics.median(ratios)
            figures[name][key + "_ratios"] = ratios
    return figures


def reference_figures(args, data: str) -> Dict[str, dict]:
    """:func:`data_figures` of the plugin in ``--reference``, from a child process."""
    plugin = os.path.join(os.path.abspath(args.reference), "unilm_fairseq")
    if not os.path.isfile(os.path.join(plugin, "__init__.py")):
        raise SystemExit(f"--reference {args.reference}: no unilm_fairseq package there")
    cmd = [
        sys.executable, os.path.abspath(__file__), "--data-only", "--data-json", "--data", data,
        "--tokens", str(args.tokens), "--batch-size", str(args.batch_size),
        "--mask-prob", str(args.mask_prob), "--batches", str(args.batches),
        "--data-rounds", str(args.data_rounds), "--threads", str(args.threads),
        "--vocab", str(args.vocab), "--seed", str(args.seed), "--systems", ",".join(args.systems),
    ]  # fmt: skip
    path = [os.path.abspath(args.reference)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    result = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    if os.path.realpath(figures.pop("plugin")) != os.path.realpath(plugin):
        raise SystemExit(f"--reference {args.reference}: the child imported another unilm_fairseq")
    return figures


def default_workers() -> int:
    """fairseq's default ``--num-workers`` (``DatasetConfig.num_workers``)."""
    from fairseq.dataclass.configs import DatasetConfig

    return DatasetConfig.num_workers


def data_report(args, figures: Dict[str, dict], reference: Optional[Dict[str, dict]]) -> None:
    """The batch-building table (against the reference when there is one) and the GPU-step context."""
    names = [n for n in args.systems if n in figures]
    header = f"{'system':<24}{'CPU ms':>8}{'vs RoBERTa':>11}  {'target':<13}{'wall ms':>8}{'vs RoB':>7}"
    header += f"{'worker ms':>10}{'vs RoB':>7}"
    if reference is not None:
        header += f"{'ref CPU ms':>11}{'ref vs RoB':>11}{'speed-up':>9}"
    header += "  per-round CPU ratios"
    print()
    print(header)
    print("-" * len(header))
    for name in names:
        fig = figures[name]
        target = ""
        if name in (AE, PMLM):
            target = f"<= {DATA_TARGET} {'PASS' if fig['cpu_ratio'] <= DATA_TARGET else 'FAIL'}"
        line = (
            f"{LABELS[name]:<24}{fig['cpu']:>8.2f}{fig['cpu_ratio']:>11.2f}  {target:<13}"
            f"{fig['wall']:>8.2f}{fig['wall_ratio']:>7.2f}{fig['worker']:>10.2f}{fig['worker_ratio']:>7.2f}"
        )
        if reference is not None:
            ref = reference[name]
            line += f"{ref['cpu']:>11.2f}{ref['cpu_ratio']:>11.2f}{ref['cpu'] / fig['cpu']:>8.1f}x"
        print(line + "  " + " ".join(f"{v:.2f}" for v in fig["cpu_ratios"]))
    print(
        f"(one batch of {args.batch_size} x {args.tokens} tokens, items then collater as a data-loader "
        f"worker builds it; CPU ms: this process's CPU time, which other processes disturb less than "
        f"wall time; worker ms: CPU time building it and moving its tensors to shared memory, as a worker "
        f"does to send it; "
        f"medians over {args.batches} batches x {args.data_rounds} rounds; vs RoBERTa: median of "
        "per-round ratios"
        + ("; ref: the --reference plugin in a child process, against its own RoBERTa)" if reference else ")")
    )
    workers = sorted({0, default_workers(), RECIPE_WORKERS})
    print()
    print(
        f"loading vs the GPU step: {args.gpu_step_ms:g} ms per update (issue 25: PMLM at base size, "
        "12 x 768, 512 tokens, batch 32, H100, float32). With W workers a batch is ready every "
        "worker ms / W (W = 0: the main process builds it between steps: CPU ms, nothing handed off)"
    )
    print(
        f"(fairseq's default --num-workers is {default_workers()}; examples/unilmv2_pretrain/"
        f"continue_pretraining.sh uses {RECIPE_WORKERS}. 'H100 host': this machine's ratios to RoBERTa "
        f"times RoBERTa's {HOST_ROBERTA_MS:g} ms built there)"
    )
    head = f"{'system':<24}{'where':<14}" + "".join(f"{f'W={w} ms/batch':>16}" for w in workers)
    print(head)
    print("-" * len(head))
    for name in names:
        fig = figures[name]
        host = (fig["cpu_ratio"] * HOST_ROBERTA_MS, fig["worker_ratio"] * HOST_ROBERTA_MS)
        for where, (build, worker) in (("this machine", (fig["cpu"], fig["worker"])), ("H100 host", host)):
            cells = ""
            for w in workers:
                per = build if w == 0 else worker / w
                verdict = "adds" if w == 0 else ("ok" if per <= args.gpu_step_ms else "SLOW")
                cells += f"{per:>11.1f} {verdict:<4}"
            print(f"{LABELS[name]:<24}{where:<14}{cells}")
    print(f"(ok: ready within one {args.gpu_step_ms:g} ms step; SLOW: the GPU waits; adds: W = 0 adds it)")


def data_only(args) -> None:
    """``--data-only``: batch building of every system, interleaved, against the reference and a GPU step."""
    with tempfile.TemporaryDirectory(prefix="bench_throughput_") as workdir:
        data = args.data or binarize(workdir, args)
        systems = {n: System(n, data, args, torch.device("cpu"), with_model=False) for n in args.systems}
        if not args.data_json:
            print("unilm_fairseq batch-building benchmark: UniLMv2 pre-training batches against RoBERTa's")
            print(machine_line(torch.device("cpu")))
            print(f"plugin  : {PLUGIN_DIR}" + (f"; reference: {args.reference}" if args.reference else ""))
            print(f"load avg: {load_average()} (1/5/15 min) at start")
            busy = busy_warning(torch.get_num_threads(), "(ratios are steadier than absolute figures)")
        time_data_rounds(systems, args.data_rounds)
        figures = data_figures(systems)
        if args.data_json:
            print(json.dumps(dict(figures, plugin=PLUGIN_DIR)))
            return
        reference = reference_figures(args, data) if args.reference else None
        data_report(args, figures, reference)
        print(f"load avg: {load_average()} (1/5/15 min) at end")
        if busy:
            print(busy)


def profile_update(system: System, rows: int) -> Tuple[Dict[str, int], Dict[str, float]]:
    """:func:`bench_common.profiled` over one update, after an unprofiled one: counts, ms by component."""
    system.run(1)
    on_gpu = next(system.model.parameters()).is_cuda
    return profiled(lambda: system.run(1), on_gpu, f"{LABELS[system.name]}, one update", rows)


def profile_report(profiles, seconds: Dict[str, List[float]], on_gpu: bool) -> None:
    """The per-update counts and milliseconds by component of :func:`profile_update`, the systems side by
    side; on a GPU also the timed update's median against the device time profiled (the rest: the device
    waiting for the host)."""
    print_counts_table("one update", {LABELS[n]: c for n, (c, _) in profiles.items()}, on_gpu, "d")
    print_times_table(f"one update, ms of {'device' if on_gpu else 'CPU'} time", {
        LABELS[n]: t for n, (_, t) in profiles.items()
    })  # fmt: skip
    if on_gpu:
        for name, (_, times) in profiles.items():
            timed = statistics.median(seconds[name]) * 1000
            print(
                f"{LABELS[name]}: timed update {timed:.1f} ms, device busy {times['total']:.1f} ms "
                f"({times['total'] / timed:.0%}; the profiled update is one of its own)"
            )


def flops_report(systems: Dict[str, System], seconds, flops: Dict[str, float], args, device) -> None:
    """Model FLOPs per update, TFLOP/s at the median update time, and utilization of the peak."""
    dtype = systems[ROBERTA].dtype
    peak = (args.peak_tflops, "--peak-tflops") if args.peak_tflops > 0 else peak_tflops(device, dtype)
    print()
    print(f"{'system':<24}{'GFLOP/update':>13}{'TFLOP/s':>9}{'MFU':>8}")
    for name in args.systems:
        achieved = flops[name] / statistics.median(seconds[name]) / 1e12
        mfu = f"{achieved / peak[0]:>8.1%}" if peak else f"{'n/a':>8}"
        print(f"{LABELS[name]:<24}{flops[name] / 1e9:>13.4g}{achieved:>9.2f}{mfu}")
    print(
        "(model FLOPs: torch.utils.flop_counter over one update per kept batch, mean; matrix products and "
        "attention at the shapes run, forward and backward; "
        + (
            f"MFU: TFLOP/s over {peak[0]:g} TFLOP/s, {peak[1]})"
            if peak
            else f"MFU: no known peak for {device} in {str(dtype).replace('torch.', '')}, pass --peak-tflops)"
        )
    )


def spread(values: List[float], digits: int) -> str:
    return f"{min(values):.{digits}f}..{max(values):.{digits}f}"


def ratio_row(label: str, values: List[float], target=None, at_most=True) -> None:
    """One ratio line: median, target and verdict when there is one, per-round values."""
    value = statistics.median(values)
    verdict = ""
    if target is not None:
        passed = value <= target if at_most else value >= target
        verdict = f"{('<= ' if at_most else '>= ') + str(target)}  {'PASS' if passed else 'FAIL'}"
    per = " ".join(f"{v:.2f}" for v in values)
    print(f"{label:<46}{value:>7.3f}  {verdict:<14}{per}")


def report(systems, args, device, seconds, words, cpu_words, cuda_peak, memory) -> None:
    """The table of systems and the ratios against RoBERTa."""
    on_cpu = device.type != "cuda"
    if not on_cpu:
        mem = {n: cuda_peak[n] / 2**20 for n in args.systems}
    elif memory is not None:
        mem = {n: memory[n]["peak_mib"] for n in args.systems}
    else:
        mem = None
    header = (
        f"{'system':<24}{'params M':>9}{'padded L':>9}{'predicted':>10}{'data ms':>8}"
        f"{'s/update':>9}{'min..max':>14}{'words/s':>9}{'vs RoBERTa':>11}"
    )
    if on_cpu:
        header += f"{'words/CPU-s':>12}{'vs RoBERTa':>11}"
        if memory is not None:
            header += f"{'peak RSS MiB':>13}{'growth MiB':>11}"
    else:
        header += f"{'peak alloc MiB':>15}"
    print()
    print(header)
    print("-" * len(header))

    def per_round(values, name):
        return [v / r for v, r in zip(values[name], values[ROBERTA])]

    for name in args.systems:
        system = systems[name]
        length, predicted = system.shape()
        line = (
            f"{LABELS[name]:<24}{system.parameters / 1e6:>9.2f}{length:>9}{predicted:>10.0f}"
            f"{statistics.median(system.data_seconds['cpu']) * 1e3:>8.1f}"
            f"{statistics.median(seconds[name]):>9.3f}"
            f"{spread(seconds[name], 3):>14}{statistics.median(words[name]):>9.0f}"
            f"{statistics.median(per_round(words, name)):>11.2f}"
        )
        if on_cpu:
            line += f"{statistics.median(cpu_words[name]):>12.0f}"
            line += f"{statistics.median(per_round(cpu_words, name)):>11.2f}"
            if memory is not None:
                growth = memory[name]["growth_mib"]
                line += f"{mem[name]:>13.0f}" + (f"{growth:>11.0f}" if growth is not None else f"{'n/a':>11}")
        else:
            line += f"{mem[name]:>15.0f}"
        print(line)
    print(
        "(words/s: fairseq's wps, the batch's text tokens (sample['ntokens']) per second of update; "
        "vs RoBERTa: median of per-round ratios; data ms: CPU time building one batch, outside the "
        "timing, as --data-only times it)"
    )
    if on_cpu:
        print(
            "(words/CPU-s: the same over the process's CPU time, which other processes' load "
            "disturbs less than wall time)"
        )
        if memory is not None:
            print(
                "(peak RSS: the system alone in a child process; growth: peak RSS during the updates "
                "over RSS before them: activations and gradients on top of the model and Adam state)"
            )

    if args.fp16:
        print("(--fp16 updates skipped on overflow: " + ", ".join(
            f"{LABELS[n]} {systems[n].overflows}" for n in args.systems) + ")")  # fmt: skip

    print()
    print(f"{'ratio':<46}{'median':>7}  {'target':<14}per round")
    for name in args.systems[1:]:
        target = AE_PER_ROBERTA_TARGET if name == AE else None
        ratio_row(f"{LABELS[name]} / RoBERTa words/s", per_round(words, name), target, at_most=False)
        if on_cpu:
            ratio_row(f"{LABELS[name]} / RoBERTa words/CPU-s", per_round(cpu_words, name), target, False)
    if AE in args.systems and PMLM in args.systems:
        step_ratios = [p / a for p, a in zip(seconds[PMLM], seconds[AE])]
        ratio_row("PMLM / AE-only seconds per update", step_ratios, PMLM_PER_AE_TARGET)
    if mem is not None:
        kind = "peak RSS" if on_cpu else "peak alloc"
        for name in args.systems[1:]:
            target = MEMORY_PER_ROBERTA_TARGET if name == AE else None
            ratio_row(f"{LABELS[name]} / RoBERTa {kind}", [mem[name] / mem[ROBERTA]], target)
        if on_cpu and all(memory[n]["growth_mib"] for n in args.systems):
            for name in args.systems[1:]:
                value = memory[name]["growth_mib"] / memory[ROBERTA]["growth_mib"]
                ratio_row(f"{LABELS[name]} / RoBERTa RSS growth", [value])
    print(f"load avg: {load_average()} (1/5/15 min) at end")


def main(argv: Optional[List[str]] = None):
    args = parse_args(argv)
    logging.disable(logging.INFO)  # fairseq's and hydra's set-up chatter
    warnings.filterwarnings("ignore")
    if args.memory_child:
        memory_child(args)
        return
    torch.set_num_threads(args.threads or os.cpu_count())
    if args.data_only:
        data_only(args)
        return
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    with tempfile.TemporaryDirectory(prefix="bench_throughput_") as workdir:
        data = args.data or binarize(workdir, args)
        systems = {name: System(name, data, args, device) for name in args.systems}
        print("unilm_fairseq training-throughput benchmark: UniLMv2 pre-training against fairseq RoBERTa")
        print(machine_line(device))
        print(f"plugin  : {PLUGIN_DIR}")
        print(f"load avg: {load_average()} (1/5/15 min) at start")
        busy = busy_warning(torch.get_num_threads(), "(ratios are steadier than absolute figures)")
        print(
            f"model   : {args.layers} layers, {args.dim} hidden, FFN {args.ffn}, {args.heads} heads, "
            f"{args.tokens} positions, dropout 0.1, GELU, post-LN, tied LM head over predicted tokens; "
            f"dictionary {len(systems[ROBERTA].task.source_dictionary)} symbols; Adam"
        )
        print(
            f"data    : {args.batch_size} x {args.tokens}-token blocks of one binarized random-word corpus, "
            f"{args.batches} batches per system cycled; mask prob {args.mask_prob} (80/10/10)"
        )
        print(
            f"timing  : {args.warmup} warmup + {args.rounds} timed rounds of {args.updates} updates per "
            "system, order reversed every round"
        )
        seconds, words, cpu_words, cuda_peak = run_rounds(systems, args, device, sync)
        time_data_rounds(systems, args.data_rounds)
        memory = cpu_memory(args, data) if device.type != "cuda" and not args.no_memory else None
        flops = {name: systems[name].flops_per_update() for name in args.systems}

        report(systems, args, device, seconds, words, cpu_words, cuda_peak, memory)
        flops_report(systems, seconds, flops, args, device)
        if busy:
            print(busy)
        if args.profile:
            profiles = {name: profile_update(systems[name], PROFILE_ROWS) for name in args.systems}
            profile_report(profiles, seconds, device.type == "cuda")


if __name__ == "__main__":
    main()
