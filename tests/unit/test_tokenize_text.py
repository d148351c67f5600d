"""scripts/tokenize_text.py: raw text -> tokens for fairseq-preprocess, line for line."""

import argparse
import json
import os

import pytest
import sentencepiece as spm
from fairseq.data.encoders import build_bpe

from unilm_fairseq.encoders.wordpiece import SPECIAL_TOKENS
from unilm_fairseq.encoders.wordpiece_tokenizer import basic_tokenize

from ..helpers import cli
from ..helpers.cli import REPO, run_cli
from ..helpers.resources import austen_documents

SCRIPT = os.path.join(REPO, "scripts", "tokenize_text.py")


def load_script():
    return cli.load_script("scripts/tokenize_text.py")


@pytest.fixture(scope="module")
def raw_files(tmp_path_factory):
    """Two parallel files of real sentences with empty and blank lines at matching places."""
    work = tmp_path_factory.mktemp("raw")
    sentences = [s for doc in austen_documents(6) for s in doc if s.strip()][:120]
    src = [s if i % 17 else "" for i, s in enumerate(sentences)]
    src[5] = "  \t "  # blank: written out empty
    src[7] = "Carriage\rreturn inside a line, and a line separator\u2028too."
    tgt = [s.split(",")[0] if s.strip() else s for s in src]
    (work / "train.src").write_text("\n".join(src) + "\n", encoding="utf-8")
    (work / "train.tgt").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    return work, src, tgt


def read_lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\n") for line in f]


def check_aligned(raw, tokenized, encode):
    assert len(tokenized) == len(raw)
    for line, tokens in zip(raw, tokenized):
        if line.strip():
            assert tokens == " ".join(encode(line).split()) and tokens
        else:
            assert tokens == ""


def test_wordpiece_cli_two_files_two_workers(raw_files, tmp_path):
    work, src, tgt = raw_files
    words = sorted({w for line in src + tgt for w in basic_tokenize(line)})
    # leave a few words out so that they are split into pieces or become [UNK]
    vocab = list(SPECIAL_TOKENS) + [w for w in words if not w.startswith("a")] + ["a", "##n", "##nd", "##s"]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    outputs = [str(tmp_path / "out.src"), str(tmp_path / "out.tgt")]
    run_cli(["python", SCRIPT, "--bpe", "wordpiece", "--wordpiece-vocab", str(vocab_file),
             "--inputs", str(work / "train.src"), str(work / "train.tgt"), "--outputs", *outputs,
             "--workers", "2"])  # fmt: skip
    bpe = build_bpe(argparse.Namespace(bpe="wordpiece", wordpiece_vocab=str(vocab_file)))
    check_aligned(src, read_lines(outputs[0]), bpe.encode)
    check_aligned(tgt, read_lines(outputs[1]), bpe.encode)
    text = " ".join(read_lines(outputs[0]))
    assert "##nd" in text and "[UNK]" in text


def test_sentencepiece(raw_files, tmp_path):
    work, src, _ = raw_files
    prefix = str(tmp_path / "spm")
    spm.SentencePieceTrainer.train(
        input=str(work / "train.src"), model_prefix=prefix, vocab_size=150, model_type="unigram",
        bos_id=-1, eos_id=-1, minloglevel=2, num_threads=1,
    )  # fmt: skip
    out = tmp_path / "out.src"
    load_script().main(["--bpe", "sentencepiece", "--sentencepiece-model", prefix + ".model",
                        "--inputs", str(work / "train.src"), "--outputs", str(out)])  # fmt: skip
    processor = spm.SentencePieceProcessor(model_file=prefix + ".model")
    check_aligned(src, read_lines(out), lambda line: " ".join(processor.encode(line, out_type=str)))


def test_gpt2_with_local_files(raw_files, tmp_path):
    """fairseq's --bpe gpt2 from a small local encoder.json/vocab.bpe: ids out, the same text back."""
    from fairseq.data.encoders.gpt2_bpe_utils import bytes_to_unicode

    work, src, _ = raw_files
    symbols = list(bytes_to_unicode().values())  # every byte: any text can be encoded
    merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("a", "n"), ("an", "d")]  # "\u0120" is a space
    symbols += ["".join(pair) for pair in merges]
    encoder_json, vocab_bpe = tmp_path / "encoder.json", tmp_path / "vocab.bpe"
    encoder_json.write_text(json.dumps({s: i for i, s in enumerate(symbols)}))
    vocab_bpe.write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    out = tmp_path / "out.src"
    load_script().main(["--bpe", "gpt2", "--gpt2-encoder-json", str(encoder_json),
                        "--gpt2-vocab-bpe", str(vocab_bpe),
                        "--inputs", str(work / "train.src"), "--outputs", str(out)])  # fmt: skip
    bpe = build_bpe(
        argparse.Namespace(bpe="gpt2", gpt2_encoder_json=str(encoder_json), gpt2_vocab_bpe=str(vocab_bpe))
    )
    tokenized = read_lines(out)
    check_aligned(src, tokenized, bpe.encode)
    for line, tokens in zip(src, tokenized):
        if line.strip():  # bytes in, bytes out: even the carriage return comes back
            assert bpe.decode(tokens) == line
    assert str(symbols.index("\u0120the")) in " ".join(tokenized).split()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--bpe", "wordpiece"], "--bpe wordpiece needs --wordpiece-vocab"),
        (["--bpe", "sentencepiece"], "--bpe sentencepiece needs --sentencepiece-model"),
        (["--bpe", "gpt2"], "nothing is downloaded"),
        (["--bpe", "wordpiece", "--wordpiece-vocab", "v.txt", "--outputs", "a", "b"], "1 --inputs but 2"),
    ],
)
def test_bad_arguments(argv, message, capsys):
    argv = ["--inputs", "in.txt", "--outputs", "out.txt"] + argv
    with pytest.raises(SystemExit):
        load_script().parse_args(argv)
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("workers", ["1", "2"])
def test_invalid_utf8_names_the_file_and_the_line(tmp_path, workers):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join([*SPECIAL_TOKENS, "good", "line", "bad", "byte"]) + "\n", encoding="utf-8")
    source = tmp_path / "train.src"
    source.write_bytes(b"good line\n" * 600 + b"bad \xff byte\n")  # past the first chunk of a worker
    argv = ["python", SCRIPT, "--bpe", "wordpiece", "--wordpiece-vocab", str(vocab), "--inputs", str(source)]
    proc = run_cli([*argv, "--outputs", str(tmp_path / "out"), "--workers", workers], check=False)
    assert proc.returncode == 1
    assert f"error: {source}:601: not UTF-8 (byte 0xff at column 5)" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "inputs, outputs, message",
    [
        (["missing.txt"], ["out.txt"], "no such input file: missing.txt"),
        (["a.txt"], ["a.txt"], "--outputs a.txt is also an input: it would be emptied before it is read"),
        (["a.txt", "b.txt"], ["out.txt", "./out.txt"], "more than once: one would overwrite the other"),
    ],
)
def test_inputs_and_outputs_are_checked_before_anything_is_written(tmp_path, monkeypatch, capsys, inputs,
                                                                    outputs, message):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("kept text\n", encoding="utf-8")
    argv = ["--bpe", "wordpiece", "--wordpiece-vocab", "v.txt", "--inputs", *inputs, "--outputs", *outputs]
    with pytest.raises(SystemExit):
        load_script().parse_args(argv)
    assert message in capsys.readouterr().err
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "kept text\n"
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize(
    "bpe, files, message",
    [
        ("wordpiece", {"vocab": b"[UNK]\n\xffa\n"}, "vocab:2: not UTF-8 (byte 0xff at column 1)"),
        ("wordpiece", {"vocab": b""}, "vocab: empty vocabulary"),
        ("wordpiece", {}, "--bpe wordpiece needs --wordpiece-vocab, a local BERT vocab.txt"),
        ("sentencepiece", {"vocab": b"not a model\n"}, "--bpe sentencepiece: "),
        ("gpt2", {}, "--bpe gpt2: file "),
    ],
)
def test_an_encoder_that_cannot_be_built_is_one_error_line(tmp_path, capsys, bpe, files, message):
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "in.txt").write_text("some text\n", encoding="utf-8")
    model = str(tmp_path / "vocab")
    options = {
        "wordpiece": ["--wordpiece-vocab", model],
        "sentencepiece": ["--sentencepiece-model", model],
        "gpt2": ["--gpt2-encoder-json", str(tmp_path / "a.json"), "--gpt2-vocab-bpe", str(tmp_path / "b")],
    }[bpe]
    argv = ["--bpe", bpe, *options, "--inputs", str(tmp_path / "in.txt"), "--outputs", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as stop:
        load_script().main(argv)
    assert str(stop.value.code).startswith("error: ") and message in str(stop.value.code), stop.value.code
    assert "\n" not in str(stop.value.code) and not (tmp_path / "out").exists()


def test_a_byte_order_mark_is_not_tokenized(tmp_path):
    """Windows editors start a UTF-8 file with U+FEFF; it must not become part of the first line's tokens."""
    text = "Emma smiled.\r\nHe left.\r\n"
    plain, marked = tmp_path / "plain.src", tmp_path / "marked.src"
    plain.write_bytes(text.encode("utf-8"))
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    outputs = [tmp_path / "plain.tok", tmp_path / "marked.tok"]
    load_script().main(["--bpe", "characters", "--inputs", str(plain), str(marked),
                        "--outputs", *map(str, outputs)])  # fmt: skip
    assert (
        read_lines(outputs[0])
        == read_lines(outputs[1])
        == ["E m m a \u2581 s m i l e d .", "H e \u2581 l e f t ."]
    )
