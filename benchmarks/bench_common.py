"""What the benchmark scripts share: a random-word dictionary, a description of the machine and a warning
when it is busy."""

import os
import platform

import fairseq
import torch
from fairseq.data import Dictionary

from unilm_fairseq.data.dictionary import MASK_SYMBOL


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
