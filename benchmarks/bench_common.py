"""What the benchmark scripts share: a random-word dictionary, a description of the machine and a warning
when it is busy."""

import os
import platform
from typing import Callable, Dict, List, Optional, Tuple

import fairseq
import torch
from fairseq.data import Dictionary

from unilm_fairseq.data.dictionary import MASK_SYMBOL
from unilm_fairseq.models.static_decoding import STATIC_STEP_RANGE


def build_dictionary(num_words: int) -> Dictionary:
    """fairseq's specials, ``num_words`` words ``w0 w1 ...``, then ``<mask>``."""
    dictionary = Dictionary()
    for i in range(num_words):
        dictionary.add_symbol(f"w{i}")
    dictionary.add_symbol(MASK_SYMBOL)
    return dictionary


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine_line(device: torch.device) -> str:
    """One line: CPU, threads, library versions and the device (with the GPU's name)."""
    return (
        f"machine : {cpu_model()}, {os.cpu_count()} logical CPUs, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), fairseq {fairseq.__version__}, "
        f"python {platform.python_version()}, device {device}"
        + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else "")
    )


BUSY_MARGIN = 0.5  # load-average slack (CPUs) before a run is reported as contended


def busy_warning(threads: int, consequence: str) -> str:
    """A warning when other processes already keep CPUs busy (1-minute load before the run starts);
    ``consequence`` says what that does to this benchmark's figures."""
    try:
        others = os.getloadavg()[0]
    except OSError:
        return ""
    cpus = os.cpu_count() or 1
    if others + threads <= cpus + BUSY_MARGIN:
        return ""
    return (
        f"WARNING: other processes were keeping ~{others:.1f} of {cpus} CPUs busy; with {threads} "
        f"threads the timings are contended {consequence}"
    )


# Dense (no sparsity) peak tensor throughput in TFLOP/s by GPU name, from NVIDIA's data sheets, per the
# dtype matrix products run in ("tf32": float32 with torch.set_float32_matmul_precision below "highest").
# The first entry whose key is in the device's name is taken, so "H100 PCIe" comes before "H100".
PEAK_TFLOPS = (
    ("H100 PCIe", {"float16": 756.0, "bfloat16": 756.0, "tf32": 378.0, "float32": 51.2}),
    ("H100", {"float16": 989.4, "bfloat16": 989.4, "tf32": 494.7, "float32": 66.9}),
    ("H200", {"float16": 989.4, "bfloat16": 989.4, "tf32": 494.7, "float32": 66.9}),
    ("A100", {"float16": 312.0, "bfloat16": 312.0, "tf32": 156.0, "float32": 19.5}),
)


def peak_tflops(device: torch.device, dtype: torch.dtype) -> Optional[Tuple[float, str]]:
    """``(TFLOP/s, what it is)`` of the device's dense peak for products in ``dtype``; None when unknown
    (every CPU, unlisted GPUs: pass the peak by hand)."""
    if device.type != "cuda":
        return None
    key = str(dtype).replace("torch.", "")
    if dtype == torch.float32 and torch.get_float32_matmul_precision() != "highest":
        key = "tf32"
    return listed_peak(torch.cuda.get_device_name(device), key)


def listed_peak(device_name: str, key: str) -> Optional[Tuple[float, str]]:
    """:data:`PEAK_TFLOPS`' entry for a GPU name and a product dtype (``float16``, ``tf32``, ...)."""
    for model, peaks in PEAK_TFLOPS:
        if model in device_name and key in peaks:
            return peaks[key], f"{device_name}, {key} dense peak"
    return None


def _cpu_attention_formulas() -> dict:
    """torch.utils.flop_counter's attention formulas for the fused CPU kernels it does not list."""
    from torch.utils import flop_counter

    def as_registered(formula):  # the formulas already take tensors: FlopCounterMode must not wrap them again
        def count(*args, **kwargs):
            return formula(*args, **kwargs)

        count._get_raw = True
        return count

    ops = torch.ops.aten
    if not hasattr(ops, "_scaled_dot_product_flash_attention_for_cpu"):
        return {}
    forward, backward = flop_counter.sdpa_flop, flop_counter.sdpa_backward_flop
    return {
        ops._scaled_dot_product_flash_attention_for_cpu: as_registered(forward),
        ops._scaled_dot_product_flash_attention_for_cpu_backward: as_registered(backward),
    }


def counted_flops(fn: Callable[[], object]) -> int:
    """FLOPs of the matrix products and attention that ``fn()`` runs, forward and backward alike, as
    ``torch.utils.flop_counter`` counts them: the shapes as run, padding and hidden keys included,
    elementwise work excluded. The model FLOPs of a utilization figure."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False, custom_mapping=_cpu_attention_formulas()) as counter:
        fn()
    return counter.get_total_flops()


HOST_READS = ("aten::_local_scalar_dense", "aten::nonzero")
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


# a profiler range (torch.profiler.record_function) whose ops a CUDA graph replays: StaticDecodingStep's
GRAPHED_RANGE = STATIC_STEP_RANGE


def _inside(event, encloses: Callable[[str], bool]) -> bool:
    """Whether a profiler event runs inside an event whose name ``encloses`` accepts."""
    parent = event.cpu_parent
    while parent is not None:
        if encloses(parent.name):
            return True
        parent = parent.cpu_parent
    return False


def _in_range(event, name: str) -> bool:
    """Whether an event runs inside the profiler range ``name``."""
    return _inside(event, lambda parent: parent == name)


def _nested_op(event) -> bool:
    """Whether an aten op event runs inside another aten op (not dispatched by Python or autograd)."""
    return _inside(event, lambda parent: parent.startswith("aten::"))


def dispatched_calls(prof) -> List[str]:
    """Names of the aten ops a ``torch.profiler`` run dispatched from Python or autograd, in order (what
    :func:`profile_counts` counts as ``ops``): what a GPU's host pays for one by one."""
    return [
        event.name for event in prof.events() if event.name.startswith("aten::") and not _nested_op(event)
    ]


# profile_counts' keys as the benchmarks' tables name them, and those a CPU profile measures
CPU_COUNTS = ("ops", "ops_graphed", "host_reads")
PROFILE_COUNT_LABELS = {
    "ops": "aten ops dispatched",
    "ops_graphed": "  of those, in a graphable step",
    "host_reads": "reads back to the host",
    "kernels": "GPU kernels",
    "copies_to_host": "copies device -> host",
    "copies_to_device": "copies host -> device",
    "copies_on_device": "copies on the device",
    "syncs": "host waits (cuda*Synchronize)",
}


def profile_counts(prof) -> Dict[str, int]:
    """What a ``torch.profiler`` run dispatched and waited for:

    * ``ops``: aten ops called from outside any other aten op (each a dispatch, and on a GPU at least
      one kernel launch unless it only makes a view);
    * ``ops_graphed``: those of ``ops`` inside the :data:`GRAPHED_RANGE` range, the fixed-shape decoding
      step that ``--decoding-step cuda_graph`` records once and replays (dispatched every step only
      without the graph: on a CPU, or with ``--decoding-step static``);
    * ``host_reads``: what the host reads back from the tensors, each a wait for the device on a GPU:
      values (``aten::_local_scalar_dense``: ``.item()``, ``int()``, ``bool()``) and ``aten::nonzero``,
      whose output size is its count (indexing with a boolean mask runs it, backward included);
    * ``kernels``, ``copies_to_host``, ``copies_to_device``, ``copies_on_device``: device kernels and
      copies (CUDA profiles only);
    * ``syncs``: calls that block the host until the GPU is done (``cuda*Synchronize``).
    """
    from torch.autograd import DeviceType

    counts = dict.fromkeys(PROFILE_COUNT_LABELS, 0)
    for event in prof.events():
        name = event.name
        if event.device_type == DeviceType.CPU:
            if name.startswith("aten::") and not _nested_op(event):
                counts["ops"] += 1
                counts["ops_graphed"] += _in_range(event, GRAPHED_RANGE)
            counts["host_reads"] += name in HOST_READS
            counts["syncs"] += name in SYNC_CALLS
        elif getattr(event, "is_user_annotation", False):  # a record_function range drawn on the device
            continue
        elif name.startswith("Memcpy"):
            direction = "copies_to_host" if "DtoH" in name else "copies_to_device" if "HtoD" in name else None
            counts[direction or "copies_on_device"] += 1
        elif not name.startswith("Memset"):
            counts["kernels"] += 1
    return counts


# what :func:`component_times` groups the dispatched ops into, by the first rule whose name part matches
# (attention before the products: a CPU math attention dispatches its own bmm and softmax inside it)
COMPONENTS = (
    ("attention", ("attention",)),
    ("matrix products", ("::mm", "::addmm", "::bmm", "::baddbmm", "::matmul", "::linear")),
    ("embeddings and bias tables", ("embedding",)),
    ("copies and casts", ("::copy_", "::to", "::_to_copy", "::clone", "::contiguous")),
    ("layer norm", ("layer_norm",)),
    ("log-softmax and loss", ("softmax", "nll_loss", "cross_entropy")),
)
OTHER_COMPONENT = "elementwise and other"
OPTIMIZER_COMPONENT = "optimizer step"  # every op inside torch's ``Optimizer.step`` range


def component(op: str) -> str:
    """The :data:`COMPONENTS` name of an aten op (``aten::mm``), or :data:`OTHER_COMPONENT`."""
    for name, parts in COMPONENTS:
        if any(op.endswith(part) or f"{part}_" in op or f"{part}." in op for part in parts):
            return name
    return OTHER_COMPONENT


def component_times(prof, on_gpu: bool) -> Dict[str, float]:
    """Milliseconds of device time (a GPU profile) or CPU time per :func:`component`, over the aten ops
    dispatched from Python and autograd (:func:`dispatched_calls`), those inside torch's optimizer step as
    one component: each op counts with everything it runs inside it, so no time is counted twice;
    ``"total"`` is their sum."""
    names = [name for name, _ in COMPONENTS] + [OPTIMIZER_COMPONENT, OTHER_COMPONENT, "total"]
    times = dict.fromkeys(names, 0.0)
    for event in prof.events():
        if not event.name.startswith("aten::") or _nested_op(event):
            continue
        in_step = _inside(event, lambda parent: parent.startswith("Optimizer.step"))
        if on_gpu:
            micros = getattr(event, "device_time_total", None)
            micros = event.cuda_time_total if micros is None else micros
        else:
            micros = event.cpu_time_total
        times[OPTIMIZER_COMPONENT if in_step else component(event.name)] += micros / 1000
        times["total"] += micros / 1000
    return times


def shown_counts(on_gpu: bool) -> List[Tuple[str, str]]:
    """``(key, label)`` of the :func:`profile_counts` a profile measured: all on a GPU, CPU_COUNTS else."""
    return [(key, label) for key, label in PROFILE_COUNT_LABELS.items() if on_gpu or key in CPU_COUNTS]


def print_counts_table(title: str, columns: Dict[str, Dict[str, float]], on_gpu: bool, fmt: str) -> None:
    """The :func:`shown_counts` rows of ``columns`` (a label -> :func:`profile_counts`, or those counts
    divided, e.g. per decoder step), side by side in ``fmt``; two columns also get their ratio."""
    width = max([22] + [len(name) + 2 for name in columns])
    ratio = len(columns) == 2
    header = f"{title:<32}" + "".join(f"{name:>{width}}" for name in columns)
    header += f"{'ratio':>8}" if ratio else ""
    print()
    print(header)
    print("-" * len(header))
    for key, label in shown_counts(on_gpu):
        values = [counts[key] for counts in columns.values()]
        if key == "ops_graphed" and not any(values):
            continue  # no graphable step profiled
        cells = "".join(f"{v:>{width}{fmt}}" for v in values)
        if ratio:
            cells += f"{values[0] / values[1]:>8.2f}" if values[1] else f"{'':>8}"
        print(f"{label:<32}{cells}")


def print_times_table(title: str, columns: Dict[str, Dict[str, float]]) -> None:
    """:func:`component_times` of each column (a label -> milliseconds by component), side by side, each
    component also as a share of its column's total; components at 0 in every column are left out."""
    width = max([22] + [len(name) + 2 for name in columns])
    header = f"{title:<32}" + "".join(f"{name:>{width}}" for name in columns)
    print()
    print(header)
    print("-" * len(header))
    for key in next(iter(columns.values())):
        if not any(times[key] for times in columns.values()):
            continue  # e.g. no optimizer step in decoding
        cells = [
            f"{times[key]:.2f} ({times[key] / times['total']:.0%})" if times["total"] else "0"
            for times in columns.values()
        ]
        print(f"{key:<32}" + "".join(f"{cell:>{width}}" for cell in cells))


def profiled(
    fn: Callable[[], object], on_gpu: bool, title: str, rows: int
) -> Tuple[Dict[str, int], Dict[str, float]]:
    """Runs ``fn()`` under ``torch.profiler`` (CPU, and CUDA on a GPU: the profiler waits for the device
    before it stops), prints ``title`` and its ``rows`` most expensive ops (by self device time on a GPU,
    self CPU time otherwise), and returns its :func:`profile_counts` and :func:`component_times`."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with profile(activities=activities) as prof:
        fn()
    kind = "CUDA" if on_gpu else "CPU"
    print()
    print(f"profile: {title}, top {rows} ops by self {kind} time")
    print(prof.key_averages().table(sort_by=f"self_{kind.lower()}_time_total", row_limit=rows))
    return profile_counts(prof), component_times(prof, on_gpu)
