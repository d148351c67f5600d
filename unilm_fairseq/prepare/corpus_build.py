"""Per-document work and bookkeeping of ``scripts/build_pretraining_corpus.py``.

:func:`process_item` runs in a worker process: it reads one document
(:func:`~.corpus_sources.read_document`), digests its normalized text for deduplication and
WordPiece-tokenizes each sentence with the plugin's ``--bpe wordpiece`` encoder, exactly as
``scripts/tokenize_text.py`` does. :class:`CorpusStats` keeps the counts per source.
"""

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from ..encoders.wordpiece import WordPieceBPE, WordPieceConfig
from .corpus_sources import SKIP_REASONS, WorkItem, read_document
from .corpus_text import document_hash

_encoder: Optional[WordPieceBPE] = None


def init_worker(vocab: str) -> None:
    """Build the tokenizer once per worker; casing follows the vocabulary (uncased: lowercased)."""
    global _encoder
    _encoder = WordPieceBPE(WordPieceConfig(wordpiece_vocab=vocab))


def process_item(item: WorkItem) -> Tuple[str, str, List[str], int, bytes]:
    """``(source, status, tokenized sentences, bytes read, digest)`` of one work item."""
    status, sentences, num_bytes = read_document(item)
    if status != "ok":
        return item[0], status, [], num_bytes, b""
    lines = [" ".join(_encoder.encode(s).split()) for s in sentences]
    lines = [line for line in lines if line]
    if not lines:
        return item[0], "empty", [], num_bytes, b""
    return item[0], "ok", lines, num_bytes, document_hash(sentences)


class BoundedFeed:
    """Work items for ``Pool.imap``, at most ``limit`` ahead of the results taken back.

    The pool's feeder thread would otherwise read every item (and the text the dictionary, Bible and
    Austen items carry) into its queue at once; call :meth:`done` per result and :meth:`stop` to end early.
    """

    def __init__(self, items: Iterable[WorkItem], limit: int):
        self._items = items
        self._slots = threading.Semaphore(limit)
        self._stopped = False

    def __iter__(self) -> Iterator[WorkItem]:
        for item in self._items:
            self._slots.acquire()
            if self._stopped:
                return
            yield item

    def done(self) -> None:
        self._slots.release()

    def stop(self) -> None:
        self._stopped = True
        self._slots.release()  # wakes the feeder if it waits for a slot


@dataclass
class CorpusStats:
    sources: Dict[str, Counter]
    tokens: int
    started: float

    def progress(self, current: str) -> str:
        elapsed = time.monotonic() - self.started
        files = sum(per["files"] for per in self.sources.values())
        return (
            f"{files} items read, {self.tokens} tokens ({self.tokens / max(elapsed, 1e-9):.0f}/s), "
            f"{elapsed:.0f} s; now reading {current}"
        )

    def summary(self, num_shards: int, disk: int, data: str) -> str:
        """A table per source and in total: input read, extraction time (each source's share of the
        reading loop), the binarized size its lines take (``MB bin``: 2 bytes per token and per line end,
        12 index bytes per line), documents, sentences, tokens and skips."""
        columns = ("files", "train_documents", "valid_documents", "train_sentences", "valid_sentences",
                   "train_tokens", "valid_tokens", "duplicate", *SKIP_REASONS)  # fmt: skip
        header = f"{'source':16} {'MB read':>8} {'s':>6} {'MB bin':>7} " + " ".join(
            f"{c:>15}" for c in columns
        )
        rows = [header]
        total: Counter = Counter()
        for name, per in list(self.sources.items()) + [("total", total)]:
            if name != "total":
                total.update(per)
            sizes = f"{per['bytes'] / 1e6:8.1f} {per['seconds']:6.0f} {binarized_bytes(per) / 1e6:7.1f}"
            rows.append(f"{name:16} {sizes} " + " ".join(f"{per[c]:15d}" for c in columns))
        elapsed = time.monotonic() - self.started
        rows.append(
            f"skipped: {total['duplicate']} duplicate documents, "
            + ", ".join(f"{total[r]} {r}" for r in SKIP_REASONS)
            + f"; {total['train_tokens'] + total['valid_tokens']} WordPiece tokens in "
            f"{total['train_documents'] + total['valid_documents']} documents, "
            f"{total['train_sentences'] + total['valid_sentences']} sentences, "
            f"{num_shards} shards, {disk / 1e6:.1f} MB on disk, {elapsed:.0f} s"
        )
        rows.append(f"DATA={data}")
        return "\n".join(rows)


BIN_TOKEN_BYTES = 2  # fairseq-preprocess stores ids as uint16 for vocabularies under 65,500 types
INDEX_BYTES_PER_LINE = 12  # an int32 size and an int64 pointer


def binarized_bytes(per: Counter) -> int:
    """About what a source's lines take in ``train/valid.{bin,idx}`` (the empty lines included)."""
    documents = per["train_documents"] + per["valid_documents"]
    lines = per["train_sentences"] + per["valid_sentences"] + documents
    return (
        per["train_tokens"] + per["valid_tokens"] + lines
    ) * BIN_TOKEN_BYTES + lines * INDEX_BYTES_PER_LINE
