"""The measuring helpers of benchmarks/: model FLOPs, profile counts, GPU peaks, and a tiny run of the
training benchmark in fairseq's --fp16 with its utilization and profile tables (what scripts/gpu_check.sh
runs at base size on a GPU)."""

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch.utils import flop_counter

from ..helpers import benchmarks as helpers

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = os.path.join(REPO, "benchmarks")


@pytest.fixture(scope="module")
def bench_common():
    return helpers.bench_common()


def test_counted_flops_of_a_linear_layer_forward_and_backward(bench_common):
    linear = torch.nn.Linear(8, 4)
    x = torch.randn(5, 8, requires_grad=True)
    # forward, the input's gradient and the weight's gradient: three products of 5 x 8 x 4
    assert bench_common.counted_flops(lambda: linear(x).sum().backward()) == 3 * 2 * 5 * 8 * 4


def test_counted_flops_include_the_fused_cpu_attention(bench_common):
    """torch's counter has no formula for the CPU flash-attention kernel SDPA runs here; without the
    added ones attention would count 0."""
    q = torch.randn(2, 3, 6, 8, requires_grad=True)
    k, v = torch.randn(2, 3, 10, 8), torch.randn(2, 3, 10, 8)
    bias = torch.randn(2, 1, 6, 10)
    counted = bench_common.counted_flops(
        lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=bias).sum().backward()
    )
    shapes = (q.shape, k.shape, v.shape)
    expected = flop_counter.sdpa_flop_count(*shapes) + flop_counter.sdpa_backward_flop_count(q.shape, *shapes)
    assert counted == expected > 0


def test_profile_counts_top_level_ops_and_host_reads(bench_common):
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(16)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        y = (x + 1).relu()
        y.sum().item()
        float(y.max())
        y[y > 0.5]  # a boolean mask: nonzero reads the count back
    counts = bench_common.profile_counts(prof)
    # add, relu, sum, item, max, item, gt, index: the ops inside them (item's read, copies, nonzero)
    # are not dispatches
    assert counts["ops"] == 8
    calls = ["aten::add", "aten::relu", "aten::sum", "aten::item", "aten::max", "aten::item", "aten::gt"]
    assert bench_common.dispatched_calls(prof) == calls + ["aten::index"]
    assert counts["host_reads"] == 3
    assert counts["kernels"] == counts["syncs"] == counts["copies_to_host"] == 0
    assert counts["ops_graphed"] == 0


def test_profile_counts_the_ops_a_cuda_graph_would_replay(bench_common):
    from torch.profiler import ProfilerActivity, profile, record_function

    x = torch.randn(16)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        x = x + 1  # outside: the host dispatches it every step
        with record_function(bench_common.GRAPHED_RANGE):
            y = x.relu() * 2
            y.sum().item()
    counts = bench_common.profile_counts(prof)
    assert counts["ops"] == 5 and counts["ops_graphed"] == 4  # relu, mul, sum, item


def test_listed_peaks(bench_common):
    assert bench_common.listed_peak("NVIDIA H100 80GB HBM3", "float16")[0] == 989.4
    assert bench_common.listed_peak("NVIDIA H100 PCIe", "float16")[0] == 756.0
    assert bench_common.listed_peak("NVIDIA H100 80GB HBM3", "tf32")[0] == 494.7
    assert bench_common.listed_peak("NVIDIA H200", "bfloat16")[0] == 989.4
    assert bench_common.listed_peak("Tesla T4", "float16") is None
    assert bench_common.peak_tflops(torch.device("cpu"), torch.float16) is None


def test_training_benchmark_in_fp16_reports_utilization_and_profile():
    proc = subprocess.run(
        [sys.executable, os.path.join(BENCHMARKS, "bench_throughput.py"), "--layers", "1", "--dim", "32",
         "--ffn", "64", "--heads", "2", "--tokens", "32", "--batch-size", "2", "--batches", "2",
         "--rounds", "1", "--updates", "1", "--warmup", "1", "--data-rounds", "1", "--no-memory",
         "--systems", "ae,pmlm", "--fp16", "--peak-tflops", "1", "--profile", "--threads", "1"],
        capture_output=True, text=True, cwd=REPO, timeout=600,
        env=dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "PMLM / AE-only seconds per update" in out
    assert "--fp16 updates skipped on overflow" in out
    rows = {}
    for line in out.splitlines():
        for label in ("RoBERTa (masked_lm)", "UniLMv2 AE only", "UniLMv2 PMLM (AE+PAR)"):
            if line.startswith(label) and line.endswith("%"):  # the utilization table
                rows[label] = [float(v.rstrip("%")) for v in line[len(label) :].split()]
    assert set(rows) == {"RoBERTa (masked_lm)", "UniLMv2 AE only", "UniLMv2 PMLM (AE+PAR)"}
    # PMLM runs the appended pseudo and original tokens too: more FLOPs than AE alone on the same blocks
    assert rows["UniLMv2 PMLM (AE+PAR)"][0] > rows["UniLMv2 AE only"][0] > 0
    ops = [line for line in out.splitlines() if line.startswith("aten ops dispatched")]
    assert len(ops) == 1 and all(int(v) > 0 for v in ops[0].split()[3:])


def test_decoding_check_lets_hypotheses_differ_only_at_near_ties():
    """bench_decoding's float32 check: a hypothesis may differ from the reference's at the same rank only
    when their scores tie to within TIE_TOLERANCE; any other difference is counted against it."""
    bench = helpers.bench_decoding()

    def hypo(tokens, score):
        return {"tokens": torch.tensor(tokens), "score": torch.tensor(score)}

    reference = [[hypo([4, 5, 2], -1.0), hypo([4, 6, 2], -1.2)]]
    same = [[hypo([4, 5, 2], -1.0), hypo([4, 6, 2], -1.2 + 1e-7)]]
    flipped = [[hypo([4, 6, 2], -1.0 + 2e-6), hypo([4, 5, 2], -1.2)]]  # a near tie, taken the other way
    apart = [[hypo([4, 7, 2], -1.0 + 10 * bench.TIE_TOLERANCE), hypo([4, 6, 2], -1.2)]]
    assert bench.compare_outputs(same, reference)[:2] == (0, 0)
    assert bench.compare_outputs(flipped, reference)[:2] == (2, 0)  # both ranks, each a tie
    differing, untied, worst = bench.compare_outputs(apart, reference)
    assert (differing, untied) == (1, 1) and worst == pytest.approx(10 * bench.TIE_TOLERANCE, rel=1e-3)


def test_component_times_split_the_dispatched_ops_without_counting_twice(bench_common):
    """The training benchmark's per-component table: every top-level op lands in one component (its
    nested ops inside it), the optimizer's step is one component, and the components add up to the total
    of the top-level ops' times."""
    assert bench_common.component("aten::_scaled_dot_product_efficient_attention_backward") == "attention"
    assert bench_common.component("aten::addmm") == "matrix products"
    assert bench_common.component("aten::embedding_dense_backward") == "embeddings and bias tables"
    assert bench_common.component("aten::copy_") == "copies and casts"
    assert bench_common.component("aten::native_layer_norm_backward") == "layer norm"
    assert bench_common.component("aten::_log_softmax") == "log-softmax and loss"
    assert {bench_common.component("aten::topk"), bench_common.component("aten::add_")} == {
        "elementwise and other"
    }

    torch.manual_seed(0)
    table, norm, linear = torch.nn.Embedding(32, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 16)
    params = [*table.parameters(), *norm.parameters(), *linear.parameters()]
    optimizer = torch.optim.Adam(params)
    ids = torch.randint(0, 32, (2, 8))

    def update():
        x = linear(norm(table(ids))).view(2, 8, 4, 4).transpose(1, 2)  # batch, heads, length, head size
        F.log_softmax(F.scaled_dot_product_attention(x, x, x).sum(1), -1).mean().backward()
        optimizer.step()

    update()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        update()
    times = bench_common.component_times(prof, on_gpu=False)
    top_level = sum(
        e.cpu_time_total / 1000
        for e in prof.events()
        if e.name.startswith("aten::") and not bench_common._nested_op(e)
    )
    assert times["total"] == pytest.approx(top_level) and times["total"] > 0
    assert sum(v for k, v in times.items() if k != "total") == pytest.approx(times["total"])
    expected = ("attention", "matrix products", "embeddings and bias tables", "layer norm", "optimizer step")
    assert [name for name in expected if not times[name] > 0] == []
