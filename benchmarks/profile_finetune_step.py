#!/usr/bin/env python
"""Where does a CPU s2s-ft fine-tuning step spend its time?

Builds the ``unilm_seq2seq`` task and model exactly as ``fairseq-train`` would (from a binarized data
folder and a converted checkpoint), takes real training batches, and times forward + backward + Adam
for each source budget in ``--max-source`` and thread count in ``--threads``. It also splits one step's
time into the Transformer body, the LM head (the 30,522-way output layer over the predicted target
tokens only) and the optimizer, and reports the attention share. A measurement, not a test: numbers
move with the machine's load, so compare the rows of one run.

    python benchmarks/profile_finetune_step.py work/aclsum/run/bin work/aclsum/run/model \\
        --max-source 128,192,256 --threads 1,2 --batch-size 8
"""

import argparse
import os
import statistics
import sys
import time

import torch
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import unilm_fairseq  # noqa: F401  (registers the plugin)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import load_average, machine_line  # noqa: E402


def build(data: str, model_dir: str, max_source: int, batch_size: int, method: str):
    with open(os.path.join(model_dir, "model_args.txt"), encoding="utf-8") as f:
        model_args = f.read().split()
    parser = options.get_training_parser()
    argv = [data, "--user-dir", os.path.dirname(unilm_fairseq.__file__), "--task", "unilm_seq2seq"]
    argv += ["--finetune-method", method, "--max-source-positions", str(max_source)]
    argv += ["--max-target-positions", "48", "--batch-size", str(batch_size), "--cpu", "--dropout", "0.1"]
    argv += ["--pretrained-checkpoint", os.path.join(model_dir, "model.pt"), "--criterion", "unilm_seq2seq"]
    argv += ["--optimizer", "adam", "--lr", "1e-4"] + model_args
    args = options.parse_args_and_arch(parser, argv)
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    iterator = task.get_batch_iterator(
        task.dataset("train"), max_sentences=batch_size, seed=1, required_batch_size_multiple=1
    ).next_epoch_itr(shuffle=True)
    batches = [next(iterator) for _ in range(6)]
    return model, criterion, batches


def step_times(model, criterion, batches, repeats: int):
    """Seconds per full step, and per part: body forward+backward, head forward+backward, Adam."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-5)
    model.train()
    totals, parts = [], {"body": [], "lm head": [], "optimizer": []}
    for i in range(repeats):
        sample = batches[i % len(batches)]
        net = sample["net_input"]
        start = time.perf_counter()
        features, _ = model(**net, features_only=True)
        predicted = features[net["masked_tokens"]].detach().requires_grad_()
        t_body_fwd = time.perf_counter()
        target = sample["layout_target"][net["masked_tokens"]]
        loss = torch.nn.functional.cross_entropy(model.lm_head(predicted), target, reduction="sum")
        loss.backward()
        t_head = time.perf_counter()
        features[net["masked_tokens"]].backward(predicted.grad)
        t_body_bwd = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad()
        end = time.perf_counter()
        if i:  # the first step warms caches and allocators
            totals.append(end - start)
            parts["body"].append((t_body_fwd - start) + (t_body_bwd - t_head))
            parts["lm head"].append(t_head - t_body_fwd)
            parts["optimizer"].append(end - t_body_bwd)
    return statistics.median(totals), {k: statistics.median(v) for k, v in parts.items()}


def attention_share(model, batches) -> float:
    """Share of one training forward+backward's CPU time spent in attention (profiler)."""
    from torch.profiler import ProfilerActivity, profile

    sample = batches[0]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        logits, _ = model(**sample["net_input"])
        logits.float().logsumexp(-1).sum().backward()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    attention = sum(
        e.self_cpu_time_total for e in events if "attention" in e.key or "softmax" in e.key or "bmm" in e.key
    )
    return attention / max(total, 1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", help="fairseq-preprocess output (unilm_seq2seq)")
    parser.add_argument("model_dir", help="converted model folder: model.pt, dict.txt, model_args.txt")
    parser.add_argument("--max-source", default="128,192,256", help="source budgets to compare")
    parser.add_argument("--threads", default="1,2", help="torch thread counts to compare")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--method", default="pseudo_masked")
    parser.add_argument("--repeats", type=int, default=6, help="steps per row (the first is not timed)")
    args = parser.parse_args(argv)
    print(machine_line(torch.device("cpu")))
    print(f"load average before: {load_average()}")
    print(
        f"{'max source':>10} {'threads':>7} {'s/step':>7} {'pairs/s':>8} {'body':>6} {'lm head':>8} "
        f"{'adam':>6} {'tokens':>7} {'predicted':>9}"
    )
    for max_source in [int(x) for x in args.max_source.split(",")]:
        model, criterion, batches = build(args.data, args.model_dir, max_source, args.batch_size, args.method)
        for threads in [int(x) for x in args.threads.split(",")]:
            torch.set_num_threads(threads)
            total, parts = step_times(model, criterion, batches, args.repeats)
            tokens = statistics.mean(int(b["net_input"]["tokens"].numel()) for b in batches)
            predicted = statistics.mean(int(b["net_input"]["masked_tokens"].sum()) for b in batches)
            print(
                f"{max_source:>10} {threads:>7} {total:>7.2f} {args.batch_size / total:>8.2f} "
                f"{parts['body'] / total:>6.0%} {parts['lm head'] / total:>8.0%} "
                f"{parts['optimizer'] / total:>6.0%} {tokens:>7.0f} {predicted:>9.0f}"
            )
        share = attention_share(model, batches)
        print(f"{'':>10} attention (scores, softmax, weighted sum) share of forward+backward: {share:.0%}")
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
