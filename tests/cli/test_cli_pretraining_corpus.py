"""scripts/build_pretraining_corpus.py end to end on real documentation excerpts: duplicates and bad
files counted and dropped, one document per file with empty lines only between documents, a held-out
split chosen by digest, and shards that ``--task pmlm`` loads round-robin."""

import os
import shutil

import pytest

from unilm_fairseq.encoders.wordpiece import WordPieceBPE, WordPieceConfig
from unilm_fairseq.prepare.corpus_sources import local_source, read_document
from unilm_fairseq.prepare.corpus_text import document_hash
from unilm_fairseq.tasks.pmlm import PMLMConfig, PMLMTask

from ..helpers.cli import REPO, run_cli
from ..helpers.resources import minilm_model_dir

SCRIPT = os.path.join(REPO, "scripts", "build_pretraining_corpus.py")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "corpus")
VALID_FRACTION = 0.07  # holds out one of the five documents (by digest)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Five real documents, a copy of one of them, and an empty, a binary and a Latin-1 file."""
    folder = tmp_path_factory.mktemp("sources")
    for name in ("python-builtins.html", "intro.1", "perlintro.pod"):
        shutil.copy(os.path.join(FIXTURES, name), folder / name)
    shutil.copy(os.path.join(FIXTURES, "perlintro.pod"), folder / "perlintro-copy.pod")
    with open(os.path.join(FIXTURES, "austen-excerpt.txt"), encoding="utf-8") as f:
        chapters = f.read().strip("\n").split("\n\n")
    for i, chapter in enumerate(chapters):
        (folder / f"austen-{i}.txt").write_text(chapter + "\n", encoding="utf-8")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "binary.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00 binary")
    (folder / "latin1.txt").write_bytes("Emma's caf\u00e9 was open all day long.".encode("latin-1"))
    return folder


@pytest.fixture(scope="module")
def corpus(sources, tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus") / "out"
    vocab = os.path.join(minilm_model_dir(), "vocab.txt")
    proc = run_cli(["python", SCRIPT, "--sources", "local", "--local-dir", str(sources),
                    "--wordpiece-vocab", vocab, "--output", str(out), "--shards", "2",
                    "--valid-fraction", str(VALID_FRACTION),
                    "--workers", "2", "--keep-text"])  # fmt: skip
    return out, vocab, proc.stderr


def expected_documents(sources, vocab):
    """{digest fraction: tokenized lines} of the distinct documents, computed the script's way."""
    bpe = WordPieceBPE(WordPieceConfig(wordpiece_vocab=vocab))
    documents = {}
    source = local_source(str(sources))
    for item in source.items(source):
        status, sentences, _ = read_document(item)
        if status == "ok":
            digest = document_hash(sentences)
            lines = [" ".join(bpe.encode(s).split()) for s in sentences]
            documents[int.from_bytes(digest[:4], "big") / 2**32] = [line for line in lines if line]
    return documents


def read_blocks(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.endswith("\n") and not text.startswith("\n")
    assert "\n\n\n" not in text  # exactly one empty line between documents, none inside one
    return [block.split("\n") for block in text.rstrip("\n").split("\n\n")]


@pytest.mark.slow
def test_counts_in_summary(corpus, sources):
    out, vocab, _ = corpus
    with open(out / "summary.txt", encoding="utf-8") as f:
        summary = f.read()
    assert "skipped: 1 duplicate documents, 1 empty, 1 binary, 1 non-UTF-8, 0 unreadable" in summary
    sentences = sum(len(lines) for lines in expected_documents(sources, vocab).values())
    assert f"in 5 documents, {sentences} sentences, 2 shards" in summary
    with open(out / "DATA") as f:
        assert f.read().strip() == f"{out / 'shard0'}:{out / 'shard1'}"


@pytest.mark.slow
def test_documents_boundaries_and_held_out_split(corpus, sources):
    out, vocab, _ = corpus
    expected = expected_documents(sources, vocab)
    assert len(expected) == 5  # the copy shares its original's digest
    valid = [lines for fraction, lines in expected.items() if fraction < VALID_FRACTION]
    train = [lines for fraction, lines in expected.items() if fraction >= VALID_FRACTION]
    assert len(valid) == 1 and len(train) == 4
    text = out / "text"
    assert read_blocks(text / "valid.txt") == valid
    shard_blocks = [read_blocks(text / f"shard{k}.txt") for k in range(2)]
    assert [len(blocks) for blocks in shard_blocks] == [2, 2]  # balanced
    assert sorted(shard_blocks[0] + shard_blocks[1]) == sorted(train)
    first = train[0][0]
    assert first == first.lower()  # uncased vocabulary: lowercased


@pytest.mark.slow
def test_shards_load_with_the_pmlm_task(corpus):
    out, _, _ = corpus
    for k in range(2):
        assert sorted(os.listdir(out / f"shard{k}")) == [
            "dict.txt", "preprocess.log", "train.bin", "train.idx", "valid.bin", "valid.idx",
        ]  # fmt: skip
    with open(out / "DATA") as f:
        data = f.read().strip()
    task = PMLMTask.setup_task(PMLMConfig(data=data, tokens_per_sample=64, seed=1))
    assert task.dictionary.index("[MASK]") == task.mask_idx
    for epoch in (1, 2):
        lines = task.load_lines("train", epoch)
        with open(out / "text" / f"shard{epoch - 1}.txt", encoding="utf-8") as f:
            text_lines = f.read().split("\n")[:-1]
        assert len(lines) == len(text_lines)
        assert task.dictionary.string(lines[0][:-1]) == text_lines[0]
        dataset = task.load_dataset("train", epoch=epoch)
        item = dataset[0]
        assert item["num_masked"] >= 1
    assert len(task.load_dataset("valid")) > 0


@pytest.mark.slow
def test_bad_options_are_one_line_errors(sources, tmp_path):
    vocab = os.path.join(minilm_model_dir(), "vocab.txt")
    base = ["python", SCRIPT, "--wordpiece-vocab", vocab, "--output", str(tmp_path / "o")]
    proc = run_cli(base + ["--sources", "nonsense"], check=False)
    assert proc.returncode == 2 and "--sources: unknown ['nonsense']" in proc.stderr
    proc = run_cli(base + ["--sources", "local", "--local-dir", str(tmp_path / "missing")], check=False)
    assert proc.returncode == 2 and "not a folder" in proc.stderr
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "notes.txt").write_text("mine")
    proc = run_cli(base + ["--sources", "local", "--local-dir", str(sources), "--overwrite"], check=False)
    assert proc.returncode == 2 and "holds files but no corpus" in proc.stderr
    assert (tmp_path / "o" / "notes.txt").exists()
    missing_vocab = ["python", SCRIPT, "--output", str(tmp_path / "o"), "--wordpiece-vocab", "nope.txt"]
    proc = run_cli(missing_vocab, check=False)
    assert proc.returncode == 2 and "--wordpiece-vocab nope.txt: no such file" in proc.stderr
    assert "Traceback" not in proc.stderr
